#!/usr/bin/env bash
# setup.sh - the one place that installs what probs needs and builds it.
#
#   bash scripts/setup.sh                 # deps + Release build in build/
#   bash scripts/setup.sh --sanitize      # deps + test deps + ASan/UBSan build in build-test/
#   bash scripts/setup.sh --deps-only
#   bash scripts/setup.sh --torch-prefix DIR   # against a PyTorch libtorch
#   bash scripts/setup.sh --no-deps --target probs ...   # build only (images)
#   bash scripts/setup.sh --which-torch   # say which libtorch it would use
#
# libtorch: Debian's libtorch-dev (CPU only) unless a PyTorch 2.x
# installation brings its own, with CMake files (that is how CUDA gets in):
# --torch-prefix DIR (torch.utils.cmake_prefix_path of that installation),
# or else the first of $PB_PYTHON, python3, /usr/bin/python3 whose torch has
# DIR/Torch/TorchConfig.cmake (Debian's python3-torch has none). It says
# which it used.
#
# Idempotent: packages already present are not reinstalled, and the build is
# incremental. Runs apt-get as root, or through sudo when not root.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=build
CMAKE_ARGS=()
TARGETS=()
DEPS_ONLY=0
NO_DEPS=0
WHICH_TORCH=0
TORCH_PREFIX=""
TEST_DEPS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) BUILD_DIR=build-test; TEST_DEPS=1; CMAKE_ARGS+=(-DPB_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug) ;;
    --build-dir) BUILD_DIR="$2"; shift ;;
    --deps-only) DEPS_ONLY=1 ;;
    --no-deps) NO_DEPS=1 ;;
    --target) TARGETS+=(--target "$2"); shift ;;
    --torch-prefix)
      [ $# -ge 2 ] || { echo "setup.sh: --torch-prefix needs a directory" >&2; exit 2; }
      TORCH_PREFIX="$2"; shift ;;
    --which-torch) WHICH_TORCH=1 ;;
    -D*) CMAKE_ARGS+=("$1") ;;
    *) echo "setup.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done

# --- which libtorch ---------------------------------------------------------
if [ -n "$TORCH_PREFIX" ]; then
  if [ ! -f "$TORCH_PREFIX/Torch/TorchConfig.cmake" ]; then
    echo "setup.sh: --torch-prefix $TORCH_PREFIX: no Torch/TorchConfig.cmake there (give torch.utils.cmake_prefix_path of a PyTorch installation)" >&2
    exit 2
  fi
else
  for py in "${PB_PYTHON:-}" python3 /usr/bin/python3; do
    [ -n "$py" ] && command -v "$py" >/dev/null 2>&1 || continue
    p=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null) || continue
    if [ -n "$p" ] && [ -f "$p/Torch/TorchConfig.cmake" ]; then
      TORCH_PREFIX=$p
      break
    fi
  done
fi
if [ -n "$TORCH_PREFIX" ]; then
  TORCH_SAYS="the PyTorch libtorch at $TORCH_PREFIX"
  CMAKE_ARGS+=("-DPB_TORCH_PREFIX=$TORCH_PREFIX")
else
  TORCH_SAYS="Debian's libtorch-dev (CPU only)"
fi
if [ "$WHICH_TORCH" = 1 ]; then
  echo "setup.sh: libtorch: $TORCH_SAYS"
  exit 0
fi

PACKAGES=(
  cmake make g++ gcc pkg-config ca-certificates
  libzmq3-dev libprotobuf-c-dev protobuf-c-compiler libuv1-dev libyaml-dev
  libcmocka-dev zlib1g-dev clang libclang-rt-dev
  libtorch-dev libopenblas0-pthread
  python3 python3-torch
  iproute2 procps curl
  docker-compose python3-yaml
  grhino grhino-data
)
# Only for the test build (--sanitize, what scripts/test.sh and CI run): a
# headless browser for tests/test_web_browser.sh (the learner's web page).
TEST_PACKAGES=(chromium fonts-dejavu-core)
if [ "$TEST_DEPS" = 1 ]; then PACKAGES+=("${TEST_PACKAGES[@]}"); fi

missing=()
for p in "${PACKAGES[@]}"; do
  # A PyTorch libtorch replaces Debian's.
  if [ -n "$TORCH_PREFIX" ] && { [ "$p" = libtorch-dev ] || [ "$p" = python3-torch ]; }; then
    continue
  fi
  [ "$NO_DEPS" = 1 ] && break
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "setup.sh: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# libtorch does its small-batch matrix work through the system BLAS; the
# reference netlib one is 5-15x slower than OpenBLAS, so make sure the
# alternative points at OpenBLAS.
if [ -e /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 ] && command -v update-alternatives >/dev/null; then
  cur=$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | awk '/^Value:/{print $2}')
  if [ "$cur" != /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 ]; then
    ${SUDO:-} update-alternatives --set libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 || true
  fi
fi

[ "$DEPS_ONLY" = 1 ] && exit 0

echo "setup.sh: libtorch: $TORCH_SAYS"
cmake -S . -B "$BUILD_DIR" "${CMAKE_ARGS[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" "${TARGETS[@]}"
echo "setup.sh: built into $BUILD_DIR/bin with $TORCH_SAYS"
