#!/usr/bin/env bash
# test_deploy.sh BIN_DIR SOURCE_DIR - checks deploy/ without a Docker engine.
#
#  1. The compose files are valid: docker-compose (Debian's 1.29) `config`,
#     the Docker CLI's `docker stack config` for stack.yml where the CLI is
#     installed, and our own structural checks (python3 + yaml) of what
#     `--scale`, restarts, Swarm placement and the healthcheck rely on.
#  2. The images copy exactly the programs the build produces, and the
#     runtime stage installs a package for every library they link.
#  3. deploy/entrypoint.sh, the command of every container, with the real
#     programs on loopback: bad settings are refused; learner + actor +
#     searcher (two processes) + evaluator run a short training; a SIGTERM
#     to the learner (what `docker compose restart learner` sends) and a new
#     start resume from the last checkpoint; a finished learner idles and
#     stays healthy; the workers and the evaluator stop cleanly; all of it
#     with the run's CURVE keys, made by the learner (PROBS_KEYS).
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: test_deploy.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
BIN=$(cd "$1" && pwd) || exit 2
SRC=$(cd "$2" && pwd) || exit 2
D="$SRC/deploy"
EP="$D/entrypoint.sh"

. "$SRC/tests/cli_lib.sh" # ok, bad, check, skipped, refused, wait_for, finish

TMP=$(mktemp -d "${TMPDIR:-/tmp}/probs-deploy.XXXXXX") || exit 2
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$p" 2>/dev/null
  done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The compose tools see only the defaults, not this shell's PROBS_*.
clean_env() { env -i PATH="$PATH" HOME="$TMP" "$@"; }

# A python3 with the yaml module (pyenv shims may lack it; Debian's has it).
PY=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import yaml' 2>/dev/null; then
    PY=$p
    break
  fi
done

# --- 1. compose files -------------------------------------------------------

echo "== 1. compose files"
for f in docker-compose.yml docker-compose.gpu.yml stack.yml prometheus.yml \
  Dockerfile Dockerfile.cuda entrypoint.sh; do
  check "deploy/$f exists" test -s "$D/$f"
done

if command -v docker-compose >/dev/null 2>&1; then
  DC=(clean_env docker-compose -f "$D/docker-compose.yml")
  check "docker-compose config: docker-compose.yml" "${DC[@]}" config -q
  check "docker-compose config: with the metrics profile" \
    "${DC[@]}" --profile metrics config -q
  check "docker-compose config: with the GPU override" \
    "${DC[@]}" -f "$D/docker-compose.gpu.yml" config -q
  out=$(clean_env PROBS_RUN_NAME=exp7 PROBS_WORK_PORT=6000 \
    docker-compose -f "$D/docker-compose.yml" config 2>&1)
  check "docker-compose config: PROBS_RUN_NAME reaches the services" \
    grep -q "PROBS_RUN_NAME: exp7" <<<"$out"
  check "docker-compose config: the published work port follows PROBS_WORK_PORT" \
    grep -q "127.0.0.1:6000:6000" <<<"$out"
  gpu=$("${DC[@]}" -f "$D/docker-compose.gpu.yml" config 2>&1)
  check "GPU override: the learner is built from Dockerfile.cuda" \
    grep -q "dockerfile: deploy/Dockerfile.cuda" <<<"$gpu"
  check "GPU override: a GPU is reserved for the learner" \
    grep -q -- "- gpu" <<<"$gpu"
  # The validator must be able to fail: a broken copy is refused.
  sed 's/restart: unless-stopped/restart: [unless-stopped]/' \
    "$D/docker-compose.yml" >"$D/.test-broken-$$.yml"
  refused "docker-compose config refuses a broken file" \
    clean_env docker-compose -f "$D/.test-broken-$$.yml" config -q
  rm -f "$D/.test-broken-$$.yml"
else
  skipped "docker-compose is not installed (scripts/setup.sh installs it): no docker-compose config"
fi

if command -v docker >/dev/null 2>&1 && docker stack config --help >/dev/null 2>&1; then
  stack_config() { clean_env "$@" docker stack config -c "$D/stack.yml" >/dev/null; }
  check "docker stack config: stack.yml (workers global)" stack_config
  out=$(clean_env PROBS_WORKER_MODE=replicated PROBS_PROMETHEUS_REPLICAS=1 \
    docker stack config -c "$D/stack.yml" 2>&1)
  check "docker stack config: stack.yml with replicated workers and Prometheus" \
    grep -q "mode: replicated" <<<"$out"
  refused "docker stack config refuses compose profiles (why stack.yml exists)" \
    clean_env docker stack config -c "$D/docker-compose.yml"
else
  skipped "no Docker CLI with 'docker stack config': stack.yml gets the structural checks only"
fi

if [ -n "$PY" ]; then
  # Structural checks: what --scale, restarts, resume and Swarm rely on.
  if "$PY" - "$D" <<'PYEOF'; then ok "structural checks of the compose files"; else bad "structural checks of the compose files"; fi
import re, sys, yaml
d = sys.argv[1]
def load(n):
    with open(f"{d}/{n}") as f:
        return yaml.safe_load(f)
errs = []
def need(cond, msg):
    if not cond:
        errs.append(msg)
ROLES = {"learner": "learner", "actor": "actor", "searcher": "searcher",
         "evaluator": "evaluator"}
entry = open(f"{d}/entrypoint.sh").read()
docker = open(f"{d}/Dockerfile").read()
m = re.search(r"PROBS_RUNS=(\S+)", docker)
runs = m.group(1) if m else None
need(runs, "Dockerfile: no ENV PROBS_RUNS")

def env_of(s):
    e = s.get("environment") or {}
    if isinstance(e, list):
        e = dict(x.split("=", 1) for x in e)
    return e

def mounts(s):
    out = {}
    for v in s.get("volumes") or []:
        if isinstance(v, str):
            parts = v.split(":")
            out[parts[1]] = parts[0]
        else:
            out[v["target"]] = v["source"]
    return out

def common(name, f):
    svcs = f.get("services") or {}
    for svc, role in ROLES.items():
        need(svc in svcs, f"{name}: no service {svc}")
        if svc not in svcs:
            continue
        s = svcs[svc]
        cmd = s.get("command")
        need(isinstance(cmd, list) and cmd and cmd[0] == role,
             f"{name}: {svc}: command should start with '{role}', is {cmd!r}")
        need("container_name" not in s,
             f"{name}: {svc}: container_name prevents scaling")
        need("probs" in str(s.get("image")), f"{name}: {svc}: image {s.get('image')!r}")
        env = env_of(s)
        for k in ("PROBS_RUN_NAME", "PROBS_LEARNER", "PROBS_WORK_PORT",
                  "PROBS_PUB_PORT", "PROBS_HTTP_PORT", "PROBS_CONFIG"):
            need(k in env, f"{name}: {svc}: environment lacks {k}")
        for k in env:
            if k.startswith("PROBS_"):
                need(re.search(r"\b" + k + r"\b", entry) is not None,
                     f"{name}: {svc}: {k} is not read by deploy/entrypoint.sh")
        for k, v in env.items():
            for var in re.findall(r"\$\{([A-Za-z_0-9]+)", str(v)):
                need(re.search(r"\$\{" + var + r":-", str(v)) is not None,
                     f"{name}: {svc}: ${{{var}}} has no default")
    # Workers: no host ports (scaling) and no run directory (weights come
    # over the network); learner and evaluator share the run volume.
    for w in ("actor", "searcher"):
        if w in svcs:
            need(not svcs[w].get("ports"), f"{name}: {w}: published ports prevent scaling")
    if "learner" in svcs and "evaluator" in svcs and runs:
        ml, me = mounts(svcs["learner"]), mounts(svcs["evaluator"])
        need(runs in ml, f"{name}: learner does not mount a volume at {runs}")
        need(ml.get(runs) == me.get(runs),
             f"{name}: learner and evaluator do not share the volume at {runs}")
        src = ml.get(runs)
        if src and not src.startswith(("/", ".")):
            need(src in (f.get("volumes") or {}), f"{name}: volume {src} is not declared")
        hc = (svcs["learner"].get("healthcheck") or {}).get("test")
        need(hc is not None and "health" in " ".join(hc),
             f"{name}: learner has no healthcheck calling 'probs-entrypoint health'")
    if "prometheus" in svcs:
        need(svcs["prometheus"].get("image", "").startswith(("prom/prometheus", "${PROMETHEUS_IMAGE")),
             f"{name}: prometheus image")
    return svcs

c = load("docker-compose.yml")
cs = common("docker-compose.yml", c)
for svc in ROLES:
    if svc in cs:
        need(cs[svc].get("restart") == "unless-stopped",
             f"docker-compose.yml: {svc}: restart should be unless-stopped")
        need(not cs[svc].get("profiles"),
             f"docker-compose.yml: {svc} must start without a profile")
need(cs.get("prometheus", {}).get("profiles") == ["metrics"],
     "docker-compose.yml: prometheus should be in the 'metrics' profile")
need("./prometheus.yml:/etc/prometheus/prometheus.yml:ro" in
     cs.get("prometheus", {}).get("volumes", []),
     "docker-compose.yml: prometheus does not mount ./prometheus.yml")
need(cs["learner"]["build"]["dockerfile"] == "deploy/Dockerfile",
     "docker-compose.yml: learner build")

g = load("docker-compose.gpu.yml")
gl = g["services"]["learner"]
need(gl["build"]["dockerfile"] == "deploy/Dockerfile.cuda", "gpu: Dockerfile.cuda")
devs = gl["deploy"]["resources"]["reservations"]["devices"]
need(any("gpu" in x.get("capabilities", []) for x in devs), "gpu: no GPU reservation")
need(set(g["services"]) == {"learner"}, "gpu: the override should touch the learner only")

s = load("stack.yml")
ss = common("stack.yml", s)
for svc, x in ss.items():
    need("profiles" not in x and "build" not in x,
         f"stack.yml: {svc}: Swarm refuses profiles and ignores build")
lc = ss["learner"]["deploy"]["placement"]["constraints"]
need(any("node.labels.probs.learner" in x for x in lc),
     "stack.yml: learner is not pinned by a node label")
need(ss["evaluator"]["deploy"]["placement"]["constraints"] == lc,
     "stack.yml: the evaluator must run where the learner's volume is")
need(ss["learner"]["deploy"].get("replicas") == 1, "stack.yml: exactly one learner")
for w in ("actor", "searcher"):
    dep = ss[w]["deploy"]
    need("replicas" not in dep,
         f"stack.yml: {w}: replicas cannot be combined with mode: global")
    need("global" in str(dep.get("mode")), f"stack.yml: {w}: mode should default to global")
    need("PROBS_WORKERS" in env_of(ss[w]), f"stack.yml: {w}: PROBS_WORKERS sizes a node")
# CURVE on by default in Swarm: the keys are secrets, readable by the
# image's user, the learner's pair for the learner, the worker's for the
# rest.
need(str(env_of(ss["learner"]).get("PROBS_KEYS")) == "/run/secrets",
     "stack.yml: PROBS_KEYS should be /run/secrets (CURVE on)")
top = s.get("secrets") or {}
uid = re.search(r"--uid (\d+)", docker)
want = {"learner": {"learner.key", "authorized_keys"},
        "actor": {"worker.key", "learner.pub"},
        "searcher": {"worker.key", "learner.pub"},
        "evaluator": {"worker.key", "learner.pub"}}
for svc, files in want.items():
    got = ss[svc].get("secrets") or []
    need({x.get("target") for x in got} == files,
         f"stack.yml: {svc}: secrets should be {sorted(files)}")
    for x in got:
        need(x.get("source") in top, f"stack.yml: secret {x.get('source')} not declared")
        need(uid and str(x.get("uid")) == uid.group(1),
             f"stack.yml: {svc}: secret {x.get('target')} not owned by the image's user")
        f = str((top.get(x.get("source")) or {}).get("file", ""))
        need(f.endswith("/" + x.get("target", "?")),
             f"stack.yml: secret {x.get('source')} reads {f}")
for svc in ROLES:
    need(set(env_of(cs[svc])) <= set(env_of(ss[svc])),
         f"stack.yml: {svc} lacks variables docker-compose.yml sets: "
         f"{sorted(set(env_of(cs[svc])) - set(env_of(ss[svc])))}")

p = load("prometheus.yml")
jobs = p["scrape_configs"]
http = re.search(r"PROBS_HTTP_PORT:-(\d+)", open(f"{d}/docker-compose.yml").read())
targets = [t for j in jobs for sc in j.get("static_configs", []) for t in sc["targets"]]
need(http and f"learner:{http.group(1)}" in targets,
     f"prometheus.yml: targets {targets} should include learner:<PROBS_HTTP_PORT default>")
need(all(j.get("metrics_path", "/metrics") == "/metrics" for j in jobs),
     "prometheus.yml: metrics_path")
for e in errs:
    print("  " + e)
sys.exit(1 if errs else 0)
PYEOF
else
  skipped "no python3 with the yaml module: no structural checks"
fi

# --- 2. images and binaries -------------------------------------------------

echo "== 2. images and binaries"
# Programs the build produced: executables that are not tests or benchmarks.
BUILT=()
for f in "$BIN"/*; do
  n=$(basename "$f")
  if [ ! -f "$f" ] || [ ! -x "$f" ]; then continue; fi
  case "$n" in test_* | bench_*) continue ;; esac
  BUILT+=("$n")
done
BUILT_S=$(printf '%s\n' "${BUILT[@]}" | sort -u)
check "the build produced probs-learner, probs-actor, probs" \
  bash -c "grep -qx probs-learner <<<'$BUILT_S' && grep -qx probs-actor <<<'$BUILT_S' && grep -qx probs <<<'$BUILT_S'"

# Joins continuation lines, then lists NAME of every build/bin/NAME the final
# stage copies out of the build stage.
copied() {
  sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' "$1" |
    grep -E '^COPY[[:space:]]+--from=build' |
    grep -oE '/build/bin/[A-Za-z0-9_.-]+' | sed 's#.*/##' | sort -u
}
for df in Dockerfile Dockerfile.cuda; do
  C=$(copied "$D/$df")
  if [ "$C" = "$BUILT_S" ]; then
    ok "$df copies exactly the built programs: $(tr '\n' ' ' <<<"$C")"
  else
    bad "$df copies [$(tr '\n' ' ' <<<"$C")] but the build produces [$(tr '\n' ' ' <<<"$BUILT_S")]"
  fi
  # The ldd check in the runtime stage names every program too.
  miss=""
  for n in $C; do grep -q "/usr/local/bin/$n\\b" "$D/$df" || miss="$miss $n"; done
  check "$df checks the libraries of every program it copies${miss:+ (missing:$miss)}" test -z "$miss"
  # Every folder the build of the programs reads (CMakeLists.txt globs) is
  # copied in; tests/ and bench/ only build tests and benchmarks.
  miss=""
  for dir in $(grep -oE 'CMAKE_SOURCE_DIR\}/[A-Za-z0-9_]+/' "$SRC/CMakeLists.txt" | sed 's#.*}/##; s#/$##' | grep -vxE 'tests|bench' | sort -u); do
    grep -qE "^COPY[[:space:]]+${dir}[[:space:]]+${dir}\$" "$D/$df" || miss="$miss $dir"
  done
  check "$df copies every source folder the programs' build reads${miss:+ (missing:$miss)}" test -z "$miss"
done
sed -n '/--target/,/&&/p' "$D/Dockerfile.cuda" | grep -oE 'probs[A-Za-z0-9_-]*' | sort -u >"$TMP/cuda-targets"
check "Dockerfile.cuda builds exactly the copied programs" \
  diff <(copied "$D/Dockerfile.cuda") "$TMP/cuda-targets"
check "Dockerfile.cuda builds through scripts/setup.sh against the image's PyTorch" \
  grep -q "bash scripts/setup.sh --no-deps .*--torch-prefix" \
  <(sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' "$D/Dockerfile.cuda")
check "Dockerfile.cuda copies scripts/setup.sh" \
  grep -qE '^COPY[[:space:]]+scripts/setup.sh[[:space:]]' "$D/Dockerfile.cuda"
# scripts/setup.sh's choice of libtorch: Debian's unless a PyTorch with
# CMake files is given or found; a wrong --torch-prefix is refused.
mkdir -p "$TMP/torchpfx/Torch" && : >"$TMP/torchpfx/Torch/TorchConfig.cmake"
printf '#!/bin/sh\necho %s\n' "$TMP/torchpfx" >"$TMP/fakepy" && chmod +x "$TMP/fakepy"
check "setup.sh --torch-prefix DIR uses that libtorch" \
  grep -q "the PyTorch libtorch at $TMP/torchpfx" \
  <(bash "$SRC/scripts/setup.sh" --which-torch --torch-prefix "$TMP/torchpfx")
check "setup.sh finds a PyTorch libtorch through \$PB_PYTHON" \
  grep -q "the PyTorch libtorch at $TMP/torchpfx" \
  <(PB_PYTHON="$TMP/fakepy" bash "$SRC/scripts/setup.sh" --which-torch)
refused "setup.sh refuses a --torch-prefix without TorchConfig.cmake" \
  bash "$SRC/scripts/setup.sh" --which-torch --torch-prefix "$TMP"
# The entrypoint runs programs the image has.
miss=""
for n in $(grep -oE '\bprobs-(learner|actor|evaluator)\b' "$EP" | sort -u); do
  grep -qx "$n" <<<"$BUILT_S" || miss="$miss $n"
done
check "deploy/entrypoint.sh runs only programs the build produces${miss:+ (missing:$miss)}" test -z "$miss"

# Runtime libraries: every library a program links (the sanitizer runtimes
# and the C/C++ base, which the slim image has, aside) must come from a
# package the runtime stage installs.
if command -v dpkg >/dev/null 2>&1 && command -v readelf >/dev/null 2>&1; then
  pkgs=$(sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' "$D/Dockerfile" |
    sed -n '/^FROM .* AS runtime/,$p' | grep -E 'apt-get install' | head -1)
  miss=""
  for n in "${BUILT[@]}"; do
    for lib in $(readelf -d "$BIN/$n" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      case "$lib" in
        libasan.so* | libubsan.so* | libc.so* | libm.so* | libgcc_s.so* | \
          libstdc++.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux*) continue ;;
      esac
      path=$(ldd "$BIN/$n" | awk -v l="$lib" '$1 == l { print $3 }')
      [ -n "$path" ] || { miss="$miss $lib(unresolved)"; continue; }
      pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path" 2>/dev/null)
      pkg=${pkg%%:*}
      [ -n "$pkg" ] || { miss="$miss $lib(no package)"; continue; }
      grep -qw -- "$pkg" <<<"$pkgs" || miss="$miss $lib($pkg)"
    done
  done
  check "the runtime stage installs the package of every linked library${miss:+ (missing:$miss)}" test -z "$miss"
else
  skipped "no dpkg/readelf: runtime package list not checked"
fi

# --- 3. the entrypoint with the real programs --------------------------------

echo "== 3. entrypoint"
export PATH="$BIN:$PATH"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$SRC/tests/lsan.supp}"
CFG="$SRC/configs/connect4-smoke.yaml"

check "entrypoint help" bash -c "bash '$EP' help | grep -q 'learner'"
refused "entrypoint without a role fails" bash "$EP"
expect_refusal() { # expect_refusal WORD ENV... -- ROLE: exit 2 naming WORD
  local word=$1
  shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local out rc
  out=$(env PROBS_CONFIG="$CFG" PROBS_RUNS="$TMP/r" "${envs[@]}" timeout 20 bash "$EP" "$@" 2>&1)
  rc=$?
  if [ $rc -eq 2 ] && grep -q "$word" <<<"$out"; then
    ok "entrypoint refuses ${envs[*]} ($*)"
  else
    bad "entrypoint should refuse ${envs[*]} ($*) naming $word; rc $rc: $out"
  fi
}
expect_refusal PROBS_WORKERS PROBS_WORKERS=abc -- actor
expect_refusal PROBS_WORKERS PROBS_WORKERS=99999 -- searcher
expect_refusal PROBS_RUN_NAME PROBS_RUN_NAME=../etc -- learner
expect_refusal PROBS_RUN_NAME PROBS_RUN_NAME=.. -- evaluator
expect_refusal PROBS_LEARNER "PROBS_LEARNER=a b" -- actor
expect_refusal PROBS_LEARNER "PROBS_LEARNER=x/../y" -- searcher
expect_refusal PROBS_WORK_PORT PROBS_WORK_PORT=70000 -- learner
expect_refusal PROBS_CONFIG PROBS_CONFIG=/nonexistent.yaml -- learner
expect_refusal PROBS_SET PROBS_SET=novalue -- actor
expect_refusal PROBS_DEVICE PROBS_DEVICE=tpu -- learner
check "entrypoint runs any other command as is" \
  bash -c "bash '$EP' probs-learner --help | grep -q usage"
refused "health fails when no learner answers" \
  env PROBS_HTTP_PORT=1 PROBS_STATE_DIR="$TMP" bash "$EP" health

# A free TCP port for the learner's HTTP server, from the kernel (never a
# guess: a busy machine may use any port of its ephemeral range).
HTTP=$("${PY:-python3}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null)
[ -n "$HTTP" ] || { echo "FAIL: no free port from the kernel (python3 missing?)"; exit 1; }
# PROBS_KEYS as docker-compose.yml sets it: the learner makes the run's CURVE
# keys, the workers and the evaluator wait for them and use them.
export PROBS_CONFIG="$CFG" PROBS_RUNS="$TMP/runs" PROBS_RUN_NAME=deploytest \
  PROBS_STATE_DIR="$TMP" PROBS_HTTP_PORT="$HTTP" PROBS_KEYS="$TMP/keys" \
  PROBS_LOG_LEVEL=info PROBS_SET="net.lease_ms=2000 net.heartbeat_ms=300 eval.games_per_opponent=2"
# Loopback ipc endpoints, as the last --set (they win): nothing collides with
# other tests running at the same time.
ENDPOINTS=(--set "net.work_endpoint=ipc://$TMP/work" --set "net.pub_endpoint=ipc://$TMP/pub")
RUN="$TMP/runs/deploytest"

wait_for() { # wait_for SECONDS COMMAND...: polls every 0.2 s
  local end=$((SECONDS + $1))
  shift
  while [ $SECONDS -lt $end ]; do "$@" && return 0; sleep 0.2; done
  return 1
}
exited() { ! kill -0 "$1" 2>/dev/null; }
status_of() { # status_of PID SECONDS: waits for PID; its exit status in rc
  if wait_for "$2" exited "$1"; then
    wait "$1"
    rc=$?
  else
    rc=timeout
  fi
}

# So many iterations that the SIGTERM below surely comes mid-run; the second
# start sets the real end.
PROBS_ITERATIONS=100000 bash "$EP" learner "${ENDPOINTS[@]}" >"$TMP/learner1.log" 2>&1 &
L=$!
PIDS+=("$L")
bash "$EP" actor "${ENDPOINTS[@]}" >"$TMP/actor.log" 2>&1 &
A=$!
PIDS+=("$A")
PROBS_WORKERS=2 bash "$EP" searcher "${ENDPOINTS[@]}" >"$TMP/searcher.log" 2>&1 &
S=$!
PIDS+=("$S")
bash "$EP" evaluator "${ENDPOINTS[@]}" >"$TMP/evaluator.log" 2>&1 &
E=$!
PIDS+=("$E")

health() { bash "$EP" health >/dev/null 2>&1; }
check "the learner becomes healthy (GET /status)" wait_for 120 health
check "the learner made the run's CURVE keys (PROBS_KEYS)" \
  test -r "$TMP/keys/learner.key" -a -r "$TMP/keys/authorized_keys"
check "the learner runs with CURVE" grep -q "CURVE on" "$RUN/learner.log"
check "the searcher container runs two processes" \
  wait_for 60 bash -c "[ \$(grep -c 'starting: role searcher' '$TMP/searcher.log') -ge 2 ]"
# `docker compose restart learner`: SIGTERM once a checkpoint is written,
# then the same command again (with an end in sight this time).
LAST=0
if wait_for 180 test -e "$RUN/checkpoints/ckpt-000001.pbck"; then
  ok "the first checkpoint is written"
  kill -TERM "$L"
  status_of "$L" 120
  check "the learner stops on SIGTERM with status 0 (was: $rc)" test "$rc" = 0
  check "a stopped learner is not marked finished" test ! -e "$TMP/probs-learner-finished"
  N=$(find "$RUN/checkpoints" -name 'ckpt-*.pbck' | sed 's/.*ckpt-0*\([0-9][0-9]*\)\.pbck/\1/' | sort -n | tail -1)
  LAST=$((N + 2))
  PROBS_ITERATIONS=$LAST bash "$EP" learner "${ENDPOINTS[@]}" >"$TMP/learner2.log" 2>&1 &
  L=$!
  PIDS+=("$L")
  check "the restarted learner resumes from its last checkpoint (version $N)" \
    wait_for 120 grep -q "resumed from .*$(printf 'ckpt-%06d' "$N")\.pbck" "$TMP/learner2.log"
else
  bad "no checkpoint within 180 s"
fi
check "the run finishes and the learner idles" wait_for 300 test -e "$TMP/probs-learner-finished"
check "the finished learner is still up (restart policies need not restart it)" kill -0 "$L"
check "the finished learner counts as healthy" health
check "the last checkpoint is version $LAST" \
  test -e "$RUN/checkpoints/$(printf 'ckpt-%06d' "$LAST").pbck"
status_of "$A" 60
check "the actor stops with status 0 when the run ends (was: $rc)" test "$rc" = 0
status_of "$S" 60
check "the two searchers stop with status 0 when the run ends (was: $rc)" test "$rc" = 0
status_of "$E" 180
check "the evaluator stops with status 0 when the run ends (was: $rc)" test "$rc" = 0
check "the evaluator wrote elo.csv into the shared run directory" test -s "$RUN/elo.csv"
kill -TERM "$L"
status_of "$L" 20
check "the idle learner stops on SIGTERM with status 0 (was: $rc)" test "$rc" = 0

# A worker container with several processes stops them all on SIGTERM.
PROBS_WORKERS=3 bash "$EP" actor "${ENDPOINTS[@]}" >"$TMP/actors3.log" 2>&1 &
A=$!
PIDS+=("$A")
wait_for 60 bash -c "[ \$(grep -c 'starting: role actor' '$TMP/actors3.log') -ge 3 ]"
check "three actor processes start in one container" \
  test "$(grep -c 'starting: role actor' "$TMP/actors3.log")" -ge 3
kill -TERM "$A"
status_of "$A" 30
check "SIGTERM stops a three-process worker container with status 0 (was: $rc)" test "$rc" = 0
left=$(pgrep -f -- "ipc://$TMP/work" | wc -l)
check "no worker process is left behind (found $left)" test "$left" -eq 0

if [ "$FAIL" -ne 0 ]; then
  for f in "$TMP"/*.log; do
    echo "---- $(basename "$f") (last 15 lines)"
    tail -n 15 "$f"
  done
fi
finish
