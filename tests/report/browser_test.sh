#!/usr/bin/env bash
# The HTML report in a real browser: headless Chromium loads the page offline, its one script counts the
# drawn bars (4 GPUs: 4 iteration bars, 8 what-if bars) with no script error, and a screenshot is taken.
# Usage: browser_test.sh HABITAT_BIN FIXTURE OUTDIR
set -uo pipefail

fail() { echo "browser_test: FAIL: $*" >&2; exit 1; }
[ $# -eq 3 ] || fail "usage: $0 HABITAT_BIN FIXTURE OUTDIR"
bin=$1 fixture=$2 out=$3
# Not skipped when missing: a skipped browser test would pass having checked nothing (CI installs it).
command -v chromium >/dev/null || fail "chromium is not installed (apt-get install chromium, or scripts/install-deps.sh)"
mkdir -p "$out" || fail "cannot create $out"

"$bin" predict "$fixture" --to H100 --to A100-SXM4-40GB --to L4 --to V100 --batch 32 --what-if batch=64 --format html -q >"$out/report.html" \
  || fail "habitat predict --format html exited with an error"
[ -s "$out/report.html" ] || fail "habitat wrote an empty report"
# Self-contained: nothing may be fetched when the page opens.
if grep -Eq '(src|href)="(https?:)?//' "$out/report.html"; then fail "the report refers to an external resource"; fi

# One profile per run, so parallel runs and a user's own Chromium do not share state.
chrome() {
  timeout 120 chromium --headless --no-sandbox --disable-gpu --run-all-compositor-stages-before-draw --virtual-time-budget=2000 \
    --user-data-dir="$out/chromium-profile" "$@" 2>"$out/chromium.log"
}
page="file://$(cd "$out" && pwd)/report.html"

dom=$(chrome --dump-dom "$page") || fail "chromium --dump-dom failed (see $out/chromium.log)"
body=$(grep -o '<body[^>]*>' <<<"$dom" | head -n1)
attr() { sed -n "s/.* $1=\"\\([^\"]*\\)\".*/\\1/p" <<<"$body"; }
[ -n "$body" ] || fail "no <body> in the dumped DOM"
[ "$(attr data-errors)" = 0 ] || fail "script errors: data-errors='$(attr data-errors)' (the inline script did not run cleanly)"
[ "$(attr data-bars)" = 4 ] || fail "iteration chart: expected 4 bars, the browser found '$(attr data-bars)'"
[ "$(attr data-what-if-bars)" = 8 ] || fail "what-if chart: expected 8 bars, the browser found '$(attr data-what-if-bars)'"

rm -f "$out/report.png"
chrome --screenshot="$out/report.png" --window-size=1280,2400 "$page" >/dev/null || fail "chromium --screenshot failed (see $out/chromium.log)"
[ -f "$out/report.png" ] || fail "no screenshot written"
size=$(stat -c %s "$out/report.png")
[ "$size" -gt 10240 ] || fail "screenshot is only $size bytes: the page probably rendered blank"
echo "browser_test: ok (4 iteration bars, 8 what-if bars, no script errors, screenshot $size bytes)"
