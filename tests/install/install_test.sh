#!/bin/sh
# Installs the build into a prefix, moves the prefix elsewhere (an install must not depend on where it
# was made, nor on the source tree), and runs the installed tools:
#   install_test.sh BUILD_DIR FIXTURE_TRACE
set -eu
build=$1
trace=$2
work=$build/install-test
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/made" >/dev/null
mv "$work/made" "$work/moved"
root=$work/moved
fail() { echo "install test: $*" >&2; exit 1; }

for tool in habitat habitat-gemm-study habitat-whatif-study habitat-calibrate-host; do
  [ -x "$root/bin/$tool" ] || fail "bin/$tool was not installed"
done
# The LibTorch and CUPTI tools, where this build made them.
for tool in habitat-collect habitat-train habitat-host-profile habitat-cupti-collect; do
  if [ -e "$build/$tool" ] || [ -e "$build/tools/torch/$tool" ]; then
    [ -x "$root/bin/$tool" ] || fail "bin/$tool was built but not installed"
  fi
done
if ls "$root"/bin/*.so >/dev/null 2>&1; then fail "a library was installed into bin/"; fi
if [ -e "$build/libhabitat_cupti_inject.so" ]; then
  ls "$root"/lib*/libhabitat_cupti_inject.so "$root"/lib/*/libhabitat_cupti_inject.so 2>/dev/null | grep -q . ||
    fail "libhabitat_cupti_inject.so is not in the install's lib folder"
fi
[ -n "$(ls "$root/share/habitat/models/"*.safetensors 2>/dev/null)" ] || fail "no models in share/habitat/models"

"$root/bin/habitat" --version | grep -q '^habitat [0-9]' || fail "--version"
# The learned models must come from the install, found relative to the binary.
unset HABITAT_MODELS || true
"$root/bin/habitat" predict "$trace" --to H200 --predictor hybrid >"$work/out.txt" 2>"$work/err.txt" ||
  { cat "$work/err.txt" >&2; fail "the installed habitat failed on $trace"; }
grep -q "operation models from $root/share/habitat/models" "$work/err.txt" ||
  { cat "$work/err.txt" >&2; fail "the models did not come from $root/share/habitat/models"; }
grep -q "MLP" "$work/out.txt" || fail "no MLP prediction in the installed binary's output"
grep -q "^H200 " "$work/out.txt" || fail "no H200 row"
echo "install test: $root works (habitat, tools, models)"
