# containers.sh - sourced by the tests that run probs in containers
# (test_containers.sh, test_k8s.sh): finds a container engine, builds
# the CPU image once per source tree, and reads their logs (has).
#
#   . "$SRC/tests/containers.sh"
#   pb_engine || skip "$PB_ENGINE_WHY"    # sets PB_ENGINE (podman|docker)
#   pb_image || fail                      # sets PB_IMAGE (probs:test-HASH)
#
# pb_engine: where the workplace's ../shared/containers/setup.sh exists and
# we are root, it runs it first (Podman with a local debian:bookworm and
# the Docker-compatible socket); otherwise it uses the user's podman or
# docker, if one answers. Sets PB_ENGINE, and DOCKER_HOST for docker-compose
# when the engine is Podman's socket. Returns 1 with PB_ENGINE_WHY set when
# there is none.
#
# pb_image: the image of deploy/Dockerfile for this tree, tagged with a hash
# of every file the build reads, so that the tests of one tree build it
# once and a changed tree builds anew. Prints the build time and the image
# size on stdout ("image: BUILT in S s, N MB" or "image: cached").

# has REGEX: stdin has a line matching REGEX, for a container's log or
# /status piped in. grep reads to the end: with pipefail, grep -q's early
# exit would fail the writer with SIGPIPE (a log that goes on past the
# line made such a check fail every time).
has() { grep -- "$1" >/dev/null; }

pb_engine() {
  PB_ENGINE=""
  PB_ENGINE_WHY=""
  local shared="$SRC/../shared/containers/setup.sh"
  if [ -f "$shared" ] && [ "$(id -u)" -eq 0 ]; then
    if ! bash "$shared" >"${TMPDIR:-/tmp}/probs-containers-setup.log" 2>&1; then
      PB_ENGINE_WHY="../shared/containers/setup.sh failed (log: ${TMPDIR:-/tmp}/probs-containers-setup.log)"
      return 1
    fi
  fi
  if command -v podman >/dev/null 2>&1 && podman info >/dev/null 2>&1; then
    PB_ENGINE=podman
    if [ -S /run/podman/podman.sock ]; then
      export DOCKER_HOST=unix:///run/podman/podman.sock
    fi
  elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    PB_ENGINE=docker
  else
    PB_ENGINE_WHY="no container engine (neither podman nor docker answers)"
    return 1
  fi
  return 0
}

# The hash of what deploy/Dockerfile reads: the sources of its COPY lines
# (not those --from a build stage), itself and .dockerignore. Read from
# the Dockerfile, so that a folder it copies is never left out of the hash
# (a fixed list here once missed common/, and a changed library reused the
# old image).
pb_tree_hash() {
  (cd "$SRC" && find $(awk '$1 == "COPY" && $2 !~ /^--/ {
        for (i = 2; i < NF; i++) print $i }' deploy/Dockerfile) \
      deploy/Dockerfile .dockerignore \
      -type f ! -name '*.o' 2>/dev/null | LC_ALL=C sort |
    xargs sha1sum | sha1sum | cut -c1-12)
}

pb_image() {
  PB_IMAGE="probs:test-$(pb_tree_hash)"
  if $PB_ENGINE image inspect "$PB_IMAGE" >/dev/null 2>&1; then
    echo "image: cached ($PB_IMAGE)"
    return 0
  fi
  local t0=$SECONDS log="${TMPDIR:-/tmp}/probs-image-build.$$.log"
  if ! $PB_ENGINE build -f "$SRC/deploy/Dockerfile" -t "$PB_IMAGE" "$SRC" \
      >"$log" 2>&1; then
    echo "image: build FAILED (log: $log)"
    tail -20 "$log"
    return 1
  fi
  local mb
  mb=$($PB_ENGINE image inspect --format '{{.Size}}' "$PB_IMAGE" 2>/dev/null |
    awk '{printf "%d", $1 / 1000000}')
  echo "image: BUILT $PB_IMAGE in $((SECONDS - t0)) s, ${mb:-?} MB"
  rm -f "$log"
  return 0
}
