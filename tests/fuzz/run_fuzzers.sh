#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for a bounded time from its seed corpus
# (tests/fuzz/corpus/<target>). Fails if any target crashes: an exception other than habitat::error, a
# sanitizer report, a non-finite value let through, a timeout or running out of memory. Crashing inputs
# are left in BUILD_DIR/fuzz-crashes; add each to the regression tests (tests/fuzz/regressions_test.cpp).
#   tests/fuzz/run_fuzzers.sh [BUILD_DIR] [SECONDS] [TARGET...]    (defaults: build-fuzz, 60, all)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="$(realpath -m "${1:-$root/build-fuzz}")"
seconds="${2:-60}"
shift $(( $# < 2 ? $# : 2 ))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(kineto_trace kineto_trace_gz ncu_csv metric_file device_file op_csv safetensors host_profile)
jobs="${JOBS:-$(nproc)}"
command -v clang++ >/dev/null || { echo "run_fuzzers: clang++ not found (scripts/install-deps.sh installs it)" >&2; exit 1; }

cmake -S "$root" -B "$dir" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release -DHABITAT_BUILD_FUZZ=ON \
  -DHABITAT_BUILD_TESTS=OFF -DHABITAT_BUILD_BENCH=OFF -DHABITAT_WITH_TORCH=OFF -DHABITAT_BUILD_CUPTI=OFF -DHABITAT_BUILD_PYTHON=OFF >/dev/null
cmake --build "$dir" --target habitat_fuzzers -j"$jobs"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
mkdir -p "$dir/fuzz-crashes" "$dir/fuzz-logs"
run_one() {
  local t="$1" work="$dir/fuzz-corpus/$1" dict=()
  mkdir -p "$work"
  case "$t" in ncu_csv | op_csv | safetensors) ;; *) dict=(-dict="$here/json.dict") ;; esac
  # New inputs go to the first folder (in the build tree); the checked-in seeds are only read.
  "$dir/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/fuzz-crashes/$t-" "${dict[@]}" "$work" "$here/corpus/$t" >"$dir/fuzz-logs/$t.log" 2>&1
}
failed=()
pids=()
names=()
for t in "${targets[@]}"; do
  [ -x "$dir/tests/fuzz/fuzz_$t" ] || { echo "run_fuzzers: no target fuzz_$t" >&2; exit 1; }
  run_one "$t" & pids+=($!); names+=("$t")
  # At most $jobs fuzzers at once (each is one process); wait for the oldest before starting another.
  if [ ${#pids[@]} -ge "$jobs" ]; then
    if ! wait "${pids[0]}"; then failed+=("${names[0]}"); fi
    pids=("${pids[@]:1}"); names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then failed+=("${names[$i]}"); fi
done
for t in "${targets[@]}"; do
  echo "fuzz_$t: $(grep -E '^stat::number_of_executed_units' "$dir/fuzz-logs/$t.log" | awk '{print $2}') inputs in ${seconds} s"
done
for t in "${failed[@]}"; do
  echo "== fuzz_$t crashed; the end of its log ($dir/fuzz-logs/$t.log):" >&2
  tail -n 60 "$dir/fuzz-logs/$t.log" >&2
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "run_fuzzers: ${#failed[@]} of ${#targets[@]} targets crashed (${failed[*]}); inputs in $dir/fuzz-crashes" >&2
  exit 1
fi
echo "run_fuzzers: ${#targets[@]} targets ran ${seconds}s each without a crash"
