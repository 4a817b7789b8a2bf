#!/usr/bin/env bash
# test.sh - installs what is needed, builds with AddressSanitizer and UBSan
# (-Wall -Wextra -Werror), runs every test with ctest, then each libFuzzer
# target of fuzz/ for PB_FUZZ_SECONDS (default 60; 0 skips them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --sanitize
(cd build-test && ctest --output-on-failure -j "$(nproc)" "$@")
FUZZ=${PB_FUZZ_SECONDS:-60}
if [ "$FUZZ" != 0 ]; then bash scripts/fuzz.sh "$FUZZ"; fi
