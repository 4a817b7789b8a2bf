#!/usr/bin/env bash
# test.sh - installs what is needed, builds with AddressSanitizer and UBSan
# (-Wall -Wextra -Werror) and the README's optimized tree (build/), runs
# every test with ctest (the sanitizer build), then each libFuzzer
# target of fuzz/ for PB_FUZZ_SECONDS (default 60; 0 skips them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --sanitize
# The README's main-job tree (optimized: some warnings, such as
# -Wformat-truncation, only show there, and -Werror makes them errors).
bash scripts/setup.sh --no-deps
(cd build-test && ctest --output-on-failure -j "$(nproc)" "$@")
FUZZ=${PB_FUZZ_SECONDS:-60}
if [ "$FUZZ" != 0 ]; then bash scripts/fuzz.sh "$FUZZ"; fi
