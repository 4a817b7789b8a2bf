#!/usr/bin/env bash
# fuzz.sh - builds the libFuzzer targets of fuzz/ with clang and runs each
# for SECONDS (default 60) from its seed corpus in fuzz/corpus/, then
# prints a table of executions, coverage and corpus size. A crash, leak or
# UB report fails the run and leaves the input under build-fuzz/crashes/
# (turn it into a unit test).
#
#   scripts/fuzz.sh [SECONDS]
#   scripts/fuzz.sh --seeds      # rewrite the binary seed corpora
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
CC=${CC:-clang}
command -v "$CC" >/dev/null || { echo "fuzz.sh: $CC not found (scripts/setup.sh installs clang)" >&2; exit 2; }
if [ ! -f build-fuzz/CMakeCache.txt ]; then
  CC="$CC" cmake -S fuzz -B build-fuzz -DCMAKE_BUILD_TYPE=Debug >/dev/null
fi
make -C build-fuzz -j"$(nproc)" >/dev/null
if [ "$SECONDS_EACH" = "--seeds" ]; then
  build-fuzz/bin/make_seeds fuzz/corpus/msg fuzz/corpus/ckpt
  exit 0
fi
[[ "$SECONDS_EACH" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a number" >&2; exit 2; }
mkdir -p build-fuzz/crashes
fail=0
printf '| target | seconds | executions | exec/s | coverage (edges) | corpus |\n|---|---:|---:|---:|---:|---:|\n' >build-fuzz/report.md
for t in msg config ckpt http; do
  work=build-fuzz/corpus-$t
  mkdir -p "$work"
  log=build-fuzz/fuzz_$t.log
  if ! build-fuzz/bin/fuzz_$t -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 \
      -timeout=10 -print_final_stats=1 -artifact_prefix=build-fuzz/crashes/$t- \
      "$work" "fuzz/corpus/$t" >"$log" 2>&1; then
    echo "fuzz.sh: fuzz_$t failed; see $log and build-fuzz/crashes/" >&2
    tail -30 "$log" >&2
    fail=1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(ls "$work" | wc -l)
  printf '| fuzz_%s | %s | %s | %s | %s | %s |\n' "$t" "$SECONDS_EACH" \
    "${execs:-?}" "${rate:-?}" "${cov:-?}" "$corp" >>build-fuzz/report.md
done
cat build-fuzz/report.md
exit $fail
