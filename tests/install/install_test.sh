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
# The Python package, where this build made it: importable from the moved prefix, with its models.
if [ -e "$build/python/habitat/__init__.py" ]; then
  site=$(ls -d "$root"/lib/python3*/dist-packages 2>/dev/null | head -1)
  [ -n "$site" ] && [ -f "$site/habitat/__init__.py" ] || fail "the Python package was built but not installed"
  [ -n "$(ls "$site/habitat/models/"*.safetensors 2>/dev/null)" ] || fail "no models beside the Python package"
  PYTHONPATH=$site /usr/bin/python3 -c "
import habitat, sys
r = habitat.predict(sys.argv[1], to=['H200'], predictor='hybrid')
assert r['H200'].iteration_ms > 0
assert 'MLP' in r['H200'].trust['methods'], r['H200'].trust
" "$trace" || fail "the installed Python package failed on $trace"
fi
echo "install test: $root works (habitat, tools, models, Python package)"
