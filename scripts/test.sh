#!/usr/bin/env bash
# test.sh - installs what is needed, builds with AddressSanitizer and UBSan
# (-Wall -Wextra -Werror), and runs every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --sanitize
cd build-test
ctest --output-on-failure -j "$(nproc)" "$@"
