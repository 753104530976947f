#!/usr/bin/env bash
# Every output format of predict (on every Kineto fixture, every catalog GPU) and of evaluate (the same
# workload and two different ones) must be free of NaN and Infinity: strict JSON parsers reject them, and
# a table that shows them has said nothing. (Each output is checked in this shell, not in a pipeline's
# subshell, so that a failure reaches the exit status.)
#   no_nonfinite.sh HABITAT_BIN FIXTURES_DIR
set -uo pipefail
bin=$1 fixtures=$2
fail=0
check() {  # check LABEL: reads the output on stdin
  local out
  out=$(cat)
  if grep -Eiq '(^|[^a-z])(nan|-?inf|infinity)([^a-z]|$)' <<<"$out"; then echo "FAIL: $1 prints NaN or Infinity"; fail=1; fi
  # JSON numbers as plain decimals: never Boost.JSON's "8E0"
  if [[ $1 == *json* ]] && grep -Eq '[0-9]E[-+]?[0-9]' <<<"$out"; then echo "FAIL: $1 prints a number like 8E0"; fail=1; fi
}
n=0
for trace in "$fixtures"/kineto/h100/*.json.gz "$fixtures"/whatif/h100/resnet50_fp32_b32.json.gz; do
  for format in table json csv html; do
    extra=()
    [[ $trace == */whatif/* ]] && extra=(--batch 32 --what-if batch=64 --what-if precision=bf16)
    check "predict $(basename "$trace") --format $format" < <("$bin" predict "$trace" --to all --format "$format" -q "${extra[@]}" 2>/dev/null)
    n=$((n + 1))
  done
done
for pair in "kineto/h200/dcgan_fp32_b128" "kineto/h200/lstm_fp32_b64"; do
  for format in table json csv; do
    check "evaluate against $pair --format $format" \
      < <("$bin" evaluate "$fixtures/kineto/h100/dcgan_fp32_b128.json.gz" "$fixtures/$pair.json.gz" --format "$format" -q 2>/dev/null)
    n=$((n + 1))
  done
done
[[ $fail == 0 ]] && echo "no_nonfinite: ok ($n outputs)"
exit $fail
