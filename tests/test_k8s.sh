#!/usr/bin/env bash
# test_k8s.sh BIN_DIR SOURCE_DIR - the Kubernetes manifests of deploy/k8s.
#
#  1. kubectl, client side, no cluster: `kubectl kustomize` renders
#     deploy/k8s (with keys made by `probs keys DIR --workers 3`, as the
#     docs say) and its test overlay; kubectl reads every object (`label
#     --local`) and decodes the Deployments into its typed objects (`set
#     env --local`: field types, quantities); structural checks in Python
#     (one Recreate learner with the evaluator in its pod on the claim, the
#     Service's ports, probes, the non-root user, requests, one image, each
#     pod mounting only its role's keys from the Secret, a key per worker
#     Deployment, all of them authorized). Without keys it must fail.
#     No kubectl: installs Debian's kubernetes-client when root, else skips
#     this part.
#  2. podman kube play, the way a cluster would run them: the test overlay
#     (connect4-smoke, 6 iterations, 2 searcher pods) with a unique name
#     prefix and the image of this tree, on a podman network of its own with
#     DNS (podman runs no Services; pods find the learner by its pod name).
#     The Secret's files are mounted as the kubelet would (podman 4.3 mounts
#     them base64-encoded): the learner's, each worker Deployment's and the
#     evaluator's keys, as the manifests pick them. Checks: CURVE with the
#     three keys, the liveness probe's command, the workers join, the run
#     trains to the end as uid 10001 on the claim's volume, the evaluator
#     rates it (elo.csv in the volume). Then the learner's pod is deleted and
#     played again with more iterations (what `kubectl apply` of a changed
#     setting does): it resumes from its newest checkpoint on the volume,
#     answers /status over the pod network, the workers (restarted by their
#     restart policy) reconnect, and the run ends at the new count. Then
#     `podman kube down`, and the volumes are removed.
#     Needs podman (tests/containers.sh finds it and builds the image);
#     prints "SKIPPED: why" for this part where there is none.
#
# PROBS_K8S_IMAGE=IMAGE uses that image instead of building this tree's.
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: test_k8s.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
BIN=$(cd "$1" && pwd) || exit 2
SRC=$(cd "$2" && pwd) || exit 2
K8S="$SRC/deploy/k8s"

PASS=0
FAIL=0
SKIP=0
ok() { PASS=$((PASS + 1)); echo "ok: $*"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL: $*"; }
skipped() { SKIP=$((SKIP + 1)); echo "SKIPPED: $*"; }
check() {
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
finish() {
  echo "test_k8s: $PASS passed, $FAIL failed, $SKIP skipped"
  [ "$FAIL" -eq 0 ]
  exit
}

not() { ! "$@"; }
quiet() { "$@" >/dev/null 2>&1; }
wait_for() { # wait_for SECONDS COMMAND...
  local end=$((SECONDS + $1))
  shift
  while [ $SECONDS -lt $end ]; do "$@" && return 0; sleep 1; done
  return 1
}

# Unique names: other tests use podman at the same time.
PREFIX="pbk8s$$-"
NET="${PREFIX}net"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/probs-k8s.XXXXXX") || exit 2
# The containers run as uid 10001 and read the key directories under here.
chmod 0711 "$TMP"
PLAYED=()
cleanup() {
  local f p
  if [ -n "${PB_ENGINE:-}" ]; then
    for f in "${PLAYED[@]}"; do timeout 120 podman kube down "$f" >/dev/null 2>&1; done
    for p in $(podman pod ls -q --filter "name=^$PREFIX" 2>/dev/null); do
      timeout 60 podman pod rm -f "$p" >/dev/null 2>&1
    done
    for p in $(podman volume ls -q --filter "name=^$PREFIX" 2>/dev/null); do
      podman volume rm -f "$p" >/dev/null 2>&1
    done
    podman network rm -f "$NET" >/dev/null 2>&1
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A python3 with the yaml module (Debian's python3-yaml; scripts/setup.sh
# installs it).
PY=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import yaml' 2>/dev/null; then
    PY=$p
    break
  fi
done
if [ -z "$PY" ]; then
  skipped "no python3 with the yaml module (python3-yaml): nothing checked"
  finish
fi

# The tree's deploy/k8s, copied, with keys made as the docs say (in the
# copy: the tree stays clean).
cp -r "$K8S" "$TMP/k8s" || exit 2
rm -rf "$TMP/k8s/keys" "$TMP/k8s/test/keys"
# make_keys DIR: `probs keys DIR --workers 3`, with the built probs or the
# image.
make_keys() {
  if [ -x "$BIN/probs" ]; then
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
      "$BIN/probs" keys "$1" --workers 3 >/dev/null
  elif [ -n "${PROBS_K8S_IMAGE:-}" ] && command -v podman >/dev/null 2>&1; then
    mkdir -p "$1" &&
      podman run --rm -u "$(id -u)" -v "$1:/keys" "$PROBS_K8S_IMAGE" probs keys /keys --workers 3 >/dev/null
  else
    echo "test_k8s: no $BIN/probs to make keys with" >&2
    return 1
  fi
}

# The checks of the rendered manifests, in Python: prints ok:/FAIL: lines.
cat >"$TMP/check.py" <<'PYEOF'
import base64, sys, yaml

docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
fails = 0
def check(what, cond):
    global fails
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        fails += 1

by_kind = {}
for d in docs:
    by_kind.setdefault(d["kind"], []).append(d)
def one(kind, name):
    found = [d for d in by_kind.get(kind, []) if d["metadata"]["name"] == name or
             d["metadata"]["name"].startswith(name + "-") and kind in ("Secret", "ConfigMap")]
    return found[0] if len(found) == 1 else None

deps = {d["metadata"]["name"]: d for d in by_kind.get("Deployment", [])}
check("Deployments learner, actor, searcher (and no others): %s" % sorted(deps),
      sorted(deps) == ["actor", "learner", "searcher"])
pvc, svc = one("PersistentVolumeClaim", "runs"), one("Service", "learner")
secret, cm = one("Secret", "probs-keys"), one("ConfigMap", "probs-env")
check("a PersistentVolumeClaim 'runs', a Service 'learner', a Secret "
      "'probs-keys-HASH' and a ConfigMap 'probs-env-HASH'",
      None not in (pvc, svc, secret, cm))
if fails:
    sys.exit(1)

L = deps["learner"]
lspec = L["spec"]["template"]["spec"]
check("learner: one replica, strategy Recreate",
      L["spec"].get("replicas") == 1 and L["spec"].get("strategy", {}).get("type") == "Recreate")
cnames = [c["name"] for c in lspec["containers"]]
check("learner's pod: containers learner and evaluator (%s)" % cnames,
      cnames == ["learner", "evaluator"])
claim_vols = {v["name"] for v in lspec["volumes"]
              if v.get("persistentVolumeClaim", {}).get("claimName") == "runs"}
for c in lspec["containers"]:
    check("%s mounts the claim 'runs' at /runs" % c["name"],
          any(m["name"] in claim_vols and m["mountPath"] == "/runs"
              for m in c.get("volumeMounts", [])))
ev = lspec["containers"][1]
check("the evaluator reaches the learner on 127.0.0.1 (its pod)",
      {"name": "PROBS_LEARNER", "value": "127.0.0.1"} in ev.get("env", []))

lc = lspec["containers"][0]
cports = {p["name"]: p["containerPort"] for p in lc.get("ports", [])}
sports = {p["name"]: p for p in svc["spec"]["ports"]}
check("the Service has the work, announcement and HTTP ports 5555, 5556, 8080",
      sorted(p["port"] for p in sports.values()) == [5555, 5556, 8080])
check("the Service's target ports are the learner container's ports",
      all(cports.get(p.get("targetPort")) == p["port"] for p in sports.values()))
labels = L["spec"]["template"]["metadata"]["labels"]
check("the Service selects the learner's pod and no worker's",
      all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()) and
      not any(all(deps[w]["spec"]["template"]["metadata"]["labels"].get(k) == v
                  for k, v in svc["spec"]["selector"].items()) for w in ("actor", "searcher")))
check("the Service is headless (workers connect to the pod itself)",
      svc["spec"].get("clusterIP") == "None")
cmdata = cm.get("data", {})
check("the workers look for the learner under the Service's name",
      cmdata.get("PROBS_LEARNER") == svc["metadata"]["name"])
check("CURVE on: PROBS_KEYS=/keys", cmdata.get("PROBS_KEYS") == "/keys")
for port, var in ((5555, "PROBS_WORK_PORT"), (5556, "PROBS_PUB_PORT"), (8080, "PROBS_HTTP_PORT")):
    check("%s=%d, the Service's port" % (var, port), cmdata.get(var) == str(port))

health = ["/usr/local/bin/probs-entrypoint", "health"]
for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
    check("learner: %s runs probs-entrypoint health" % probe,
          lc.get(probe, {}).get("exec", {}).get("command") == health)

images = set()
roles = {}
for name, d in sorted(deps.items()):
    spec = d["spec"]["template"]["spec"]
    sc = spec.get("securityContext", {})
    check("%s: pod runs as uid/gid 10001, non-root, fsGroup 10001" % name,
          sc.get("runAsUser") == 10001 and sc.get("runAsGroup") == 10001 and
          sc.get("runAsNonRoot") is True and sc.get("fsGroup") == 10001)
    for c in spec["containers"]:
        images.add(c["image"])
        roles[c["name"]] = (c.get("args") or [None])[0]
        req = c.get("resources", {}).get("requests", {})
        check("%s/%s: cpu and memory requests" % (name, c["name"]),
              "cpu" in req and "memory" in req)
        check("%s/%s: the settings come from the ConfigMap" % (name, c["name"]),
              any(e.get("configMapRef", {}).get("name") == cm["metadata"]["name"]
                  for e in c.get("envFrom", [])))
        check("%s/%s: no privilege escalation" % (name, c["name"]),
              c.get("securityContext", {}).get("allowPrivilegeEscalation") is False)
check("one image for every container (%s)" % sorted(images), len(images) == 1)
check("each container's argument is its role (%s)" % roles,
      roles == {"learner": "learner", "evaluator": "evaluator",
                "actor": "actor", "searcher": "searcher"})

# The keys: what each container gets from the Secret, by the names the
# entrypoint and the programs look for.
sdata = {k: base64.b64decode(v).decode() for k, v in secret.get("data", {}).items()}
def pub_of(text):
    for line in text.splitlines():
        if line.startswith("public-key "):
            return line.split()[1]
got = {}
for name, d in sorted(deps.items()):
    spec = d["spec"]["template"]["spec"]
    vols = {v["name"]: v for v in spec["volumes"]}
    for c in spec["containers"]:
        files = {}
        for m in c.get("volumeMounts", []):
            s = vols[m["name"]].get("secret")
            if s is None or m["mountPath"] != "/keys":
                continue
            check("%s/%s: the Secret is mounted read-only" % (name, c["name"]), m.get("readOnly") is True)
            check("%s/%s: the Secret volume refers to the generated Secret" % (name, c["name"]),
                  s.get("secretName") == secret["metadata"]["name"])
            for it in s.get("items") or [{"key": k, "path": k} for k in sdata]:
                check("%s/%s: Secret key %s exists" % (name, c["name"], it["key"]), it["key"] in sdata)
                files[it["path"]] = sdata.get(it["key"], "")
        got[c["name"]] = files
lk = got.get("learner", {})
check("the learner gets learner.key, learner.pub, authorized_keys",
      sorted(lk) == ["authorized_keys", "learner.key", "learner.pub"] and
      "secret-key " in lk["learner.key"])
worker_pubs = {}
for role in ("actor", "searcher", "evaluator"):
    f = got.get(role, {})
    check("%s gets only worker.key and learner.pub" % role,
          sorted(f) == ["learner.pub", "worker.key"] and "secret-key " in f.get("worker.key", ""))
    worker_pubs[role] = pub_of(f.get("worker.key", ""))
check("actor, searcher and evaluator have keys of their own",
      None not in worker_pubs.values() and len(set(worker_pubs.values())) == 3)
auth = set(l.strip() for l in lk.get("authorized_keys", "").splitlines()
           if l.strip() and not l.startswith("#"))
check("authorized_keys lets in exactly these three keys",
      auth == set(worker_pubs.values()))
check("the workers pin the learner's public key",
      all(pub_of(got[r]["learner.pub"]) == pub_of(lk.get("learner.key", ""))
          for r in worker_pubs if "learner.pub" in got.get(r, {})))
sys.exit(1 if fails else 0)
PYEOF

# podmanize IN OUT VOLDIR [learner|workers|all] [pvc|nopvc]: the rendered
# manifests as podman 4.3's `kube play` can run them. The Secret's files are
# written under VOLDIR as the kubelet would mount them (decoded, items
# renamed, defaultMode, group fsGroup) and each secret volume becomes a
# read-only hostPath; Secrets and Services are left out (podman mounts the
# one base64-encoded and ignores the other).
cat >"$TMP/podmanize.py" <<'PYEOF'
import base64, os, sys, yaml

src, out, voldir, which, pvc = sys.argv[1:6]
docs = [d for d in yaml.safe_load_all(open(src)) if d]
secrets = {d["metadata"]["name"]: d.get("data", {}) for d in docs if d["kind"] == "Secret"}
keep = []
for d in docs:
    kind, name = d["kind"], d["metadata"]["name"]
    if kind in ("Secret", "Service"):
        continue
    if kind == "PersistentVolumeClaim" and pvc != "pvc":
        continue
    if kind == "Deployment":
        is_learner = name.endswith("learner")
        if (which == "learner" and not is_learner) or (which == "workers" and is_learner):
            continue
        spec = d["spec"]["template"]["spec"]
        group = spec.get("securityContext", {}).get("fsGroup")
        for v in spec.get("volumes", []):
            s = v.pop("secret", None)
            if s is None:
                continue
            data = secrets[s["secretName"]]
            path = os.path.join(voldir, name + "-" + v["name"])
            os.makedirs(path, exist_ok=True)
            os.chmod(path, 0o755)
            for it in s.get("items") or [{"key": k, "path": k} for k in data]:
                f = os.path.join(path, it["path"])
                with open(f, "wb") as fh:
                    fh.write(base64.b64decode(data[it["key"]]))
                mode = it.get("mode", s.get("defaultMode", 0o644))
                if os.geteuid() == 0 and group is not None:
                    os.chown(f, 0, group)
                else:
                    mode |= 0o444  # rootless: the file's owner maps to root inside
                os.chmod(f, mode)
            v["hostPath"] = {"path": path, "type": "Directory"}
    keep.append(d)
order = {"ConfigMap": 0, "PersistentVolumeClaim": 1}
keep.sort(key=lambda d: order.get(d["kind"], 2))
yaml.safe_dump_all(keep, open(out, "w"), sort_keys=False)
PYEOF

# --- 1. kubectl, client side -----------------------------------------------

echo "== 1. kubectl: render and check the manifests (no cluster)"
KUBECTL=$(command -v kubectl)
if [ -z "$KUBECTL" ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's kubernetes-client (kubectl)"
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq kubernetes-client \
    >"$TMP/apt.log" 2>&1 || tail -5 "$TMP/apt.log"
  KUBECTL=$(command -v kubectl)
fi
if [ -z "$KUBECTL" ]; then
  skipped "no kubectl (Debian: apt-get install kubernetes-client): the manifests are not rendered"
else
  # No cluster, no kubeconfig: only client-side commands.
  kc() { env -u KUBECONFIG HOME="$TMP" "$KUBECTL" "$@"; }
  echo "kubectl: $(kc version --client 2>/dev/null | head -1)"
  if kc kustomize "$TMP/k8s" >"$TMP/nokeys.yaml" 2>"$TMP/nokeys.err"; then
    bad "without keys, kubectl kustomize deploy/k8s must fail"
  else
    check "without keys, kubectl kustomize deploy/k8s fails naming keys/learner.key" \
      grep -q 'keys/learner.key' "$TMP/nokeys.err"
  fi
  if make_keys "$TMP/k8s/keys" && make_keys "$TMP/k8s/test/keys"; then
    for o in "" test; do
      what="deploy/k8s${o:+/$o}"
      out="$TMP/render${o:+-$o}.yaml"
      if kc kustomize "$TMP/k8s/$o" >"$out" 2>"$out.err"; then
        ok "kubectl kustomize $what renders ($(grep -c '^kind:' "$out") objects)"
        n=$(kc label --local -f "$out" probs.test/checked=1 -o name 2>"$out.label" | wc -l)
        check "kubectl reads every object of $what ($n)" \
          test "$n" -eq "$(grep -c '^kind:' "$out")"
        "$PY" -c 'import sys, yaml; yaml.safe_dump_all([d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Deployment"], open(sys.argv[2], "w"))' \
          "$out" "$out.deployments"
        n=$(kc set env --local -f "$out.deployments" PROBS_CHECK=1 -o name 2>"$out.setenv" | wc -l)
        check "kubectl decodes the Deployments of $what into typed objects ($n)" \
          test "$n" -eq 3 -a ! -s "$out.setenv"
        [ -s "$out.setenv" ] && head -5 "$out.setenv"
      else
        bad "kubectl kustomize $what renders"
        head -5 "$out.err"
      fi
    done
    if [ -s "$TMP/render.yaml" ]; then
      while IFS= read -r line; do
        case "$line" in
          ok:*) ok "${line#ok: }" ;;
          FAIL:*) bad "${line#FAIL: }" ;;
          *) echo "$line" ;;
        esac
      done < <("$PY" "$TMP/check.py" "$TMP/render.yaml" 2>&1)
    fi
    if [ -s "$TMP/render-test.yaml" ]; then
      check "the test overlay: the same checks pass" \
        "$PY" "$TMP/check.py" "$TMP/render-test.yaml" >/dev/null 2>&1
      check "the test overlay: connect4-smoke, 6 iterations, 2 searcher pods" \
        "$PY" -c 'import sys, yaml
d = [x for x in yaml.safe_load_all(open(sys.argv[1])) if x]
cm = [x for x in d if x["kind"] == "ConfigMap"][0]["data"]
s = [x for x in d if x["kind"] == "Deployment" and x["metadata"]["name"] == "searcher"][0]
sys.exit(not (cm["PROBS_CONFIG"].endswith("/connect4-smoke.yaml") and cm["PROBS_ITERATIONS"] == "6" and s["spec"]["replicas"] == 2))' \
        "$TMP/render-test.yaml"
    fi
  else
    bad "probs keys DIR --workers 3"
  fi
fi

# --- 2. podman kube play ---------------------------------------------------

echo "== 2. podman kube play: a short run trains, is rated and resumes"
. "$SRC/tests/containers.sh"
if [ -z "$KUBECTL" ]; then
  skipped "podman kube play: no kubectl to render the manifests with"
  finish
fi
if ! pb_engine; then
  skipped "podman kube play: $PB_ENGINE_WHY"
  finish
fi
if [ "$PB_ENGINE" != podman ]; then
  PB_ENGINE=""
  skipped "podman kube play: the container engine is docker, not podman"
  finish
fi
if [ -n "${PROBS_K8S_IMAGE:-}" ]; then
  PB_IMAGE=$PROBS_K8S_IMAGE
  echo "image: $PB_IMAGE (PROBS_K8S_IMAGE)"
elif ! pb_image; then
  bad "the image builds"
  finish
fi
podman image inspect "$PB_IMAGE" >/dev/null 2>&1 || { bad "image $PB_IMAGE exists"; finish; }
if [ ! -s "$TMP/k8s/test/keys/learner.key" ]; then
  make_keys "$TMP/k8s/test/keys" || { bad "probs keys for the test overlay"; finish; }
fi

# The test's own overlay on deploy/k8s/test: unique names, this image, and
# the learner's pod name for PROBS_LEARNER. render ITERATIONS OUT.
img_name=${PB_IMAGE%:*}
img_tag=${PB_IMAGE##*:}
case "$img_name" in */*) ;; *) img_name="localhost/$img_name" ;; esac
mkdir -p "$TMP/play" "$TMP/vol"
render() {
  cat >"$TMP/play/kustomization.yaml" <<EOF
bases:
- ../k8s/test
namePrefix: $PREFIX
images:
- name: probs
  newName: $img_name
  newTag: "$img_tag"
configMapGenerator:
- name: probs-env
  behavior: merge
  literals:
  - PROBS_LEARNER=${PREFIX}learner-pod-0
  - PROBS_ITERATIONS=$1
EOF
  kc kustomize "$TMP/play" >"$2.k8s" 2>"$2.err" || { cat "$2.err"; return 1; }
}
RUN=/runs/k8s-smoke
LPOD="${PREFIX}learner-pod-0"
LC="$LPOD-learner"
EC="$LPOD-evaluator"
llog() { podman logs "$LC" 2>&1; }
log_has() { llog | grep -q -- "$1"; } # log_has REGEX: the learner's log has it
elo_has() { # elo_has VERSION: elo.csv on the volume has a row for it
  podman exec "$EC" cat "$RUN/elo.csv" 2>/dev/null | grep -q "^$1,"
}
down() { timeout 120 podman kube down "$1" >"$1.down" 2>&1; } # down FILE
play() { # play FILE
  PLAYED+=("$1")
  timeout 300 podman kube play --network "$NET" "$1" >"$1.out" 2>&1 || { tail -5 "$1.out"; return 1; }
}

if ! podman network create "$NET" >/dev/null 2>&1; then
  bad "podman network create $NET"
  finish
fi
if ! render 6 "$TMP/run1.yaml" ||
  ! "$PY" "$TMP/podmanize.py" "$TMP/run1.yaml.k8s" "$TMP/run1.yaml" "$TMP/vol" all pvc; then
  bad "the test overlay renders for podman"
  finish
fi
t0=$SECONDS
check "podman kube play: the claim, the learner (+ evaluator), 1 actor and 2 searcher pods" \
  play "$TMP/run1.yaml"
npods=$(podman pod ls -q --filter "name=^$PREFIX" | wc -l)
check "4 pods started ($npods)" test "$npods" -eq 4
check "the learner says CURVE is on with 3 authorized worker keys" \
  wait_for 120 log_has 'CURVE on: .*3 authorized worker key'
check "the learner trains its first iteration" \
  wait_for 240 log_has 'iteration 1 done'
t_first=$((SECONDS - t0))
check "run 1 trains to the end: all 6 iterations" \
  wait_for 300 log_has 'all 6 iterations done'
t_done=$((SECONDS - t0))
echo "podman kube play to the first iteration: ${t_first} s; to the end of 6 iterations: ${t_done} s"
nsearch=$(llog | grep -o "searcher [^ ]* joined (host [^,]*" | sed 's/.*host //' | sort -u | wc -l)
check "both searcher pods joined ($nsearch hosts)" test "$nsearch" -ge 2
check "the actor pod joined" log_has 'actor .* joined'
nkeys=$(llog | grep -o 'CURVE: worker key [^ ]* from [^ ]* accepted' | awk '{print $4}' | sort -u | wc -l)
check "three distinct worker keys were accepted (actor, searcher, evaluator: $nkeys)" test "$nkeys" -eq 3
check "no key was refused" not log_has 'CURVE: .* refused'
check "the evaluator rates the run: elo.csv on the volume has version 6" wait_for 180 elo_has 6
check "the run directory is written by uid 10001" \
  test "$(podman exec "$LC" stat -c %u "$RUN/checkpoints/ckpt-000006.pbck" 2>/dev/null)" = 10001
# The learner's liveness probe (podman makes a healthcheck of it; nothing
# runs it on its own here). The finished learner idles and stays healthy.
if [ "$(podman inspect --format '{{.Config.Healthcheck}}' "$LC" 2>/dev/null)" != "<nil>" ]; then
  check "the learner's liveness probe passes (podman healthcheck run)" \
    wait_for 60 podman healthcheck run "$LC"
else
  check "the learner's probe command passes (probs-entrypoint health)" \
    wait_for 60 podman exec "$LC" /usr/local/bin/probs-entrypoint health
fi

# The learner's pod goes (a rescheduled pod, or `kubectl apply` of a changed
# setting) while the workers stay; its successor raises the iterations and
# resumes from the volume.
# replace_learner FROM_ITERATIONS TO_ITERATIONS: the learner of the first
# taken down, the second's played.
replace_learner() {
  render "$2" "$TMP/run$2.yaml" &&
    "$PY" "$TMP/podmanize.py" "$TMP/run$2.yaml.k8s" "$TMP/learner$2.yaml" "$TMP/vol" learner nopvc ||
    return 1
  "$PY" "$TMP/podmanize.py" "$TMP/run$1.yaml.k8s" "$TMP/learner$1.yaml" "$TMP/vol" learner nopvc &&
    down "$TMP/learner$1.yaml" || return 1
  podman volume exists "${PREFIX}runs" || { echo "the volume ${PREFIX}runs is gone"; return 1; }
  play "$TMP/learner$2.yaml"
}
echo "== resume: the learner's pod replaced (workers running), now 8 iterations"
mv "$TMP/run1.yaml.k8s" "$TMP/run6.yaml.k8s"
t0=$SECONDS
check "the learner's pod is taken down and played again with 8 iterations; the volume stays" \
  replace_learner 6 8
check "the learner resumes from checkpoint 6 on the volume" \
  wait_for 120 log_has 'resumed from .*ckpt-000006.pbck'
check "the workers reconnect and the run ends at 8 iterations" \
  wait_for 300 log_has 'all 8 iterations done'
echo "resumed run: 2 more iterations in $((SECONDS - t0)) s (workers retry their Hello every 10 s)"
restarts=0
for c in $(podman ps -a --format '{{.Names}}' --filter "name=^${PREFIX}(actor|searcher)-pod"); do
  case "$c" in *-infra) ;; *) restarts=$((restarts + $(podman inspect --format '{{.RestartCount}}' "$c" 2>/dev/null || echo 0))) ;; esac
done
echo "worker containers restarted $restarts time(s) by their restart policy (they exit 0 on STOPPING)"
check "the evaluator rates version 8" wait_for 180 elo_has 8
echo "elo.csv: $(podman exec "$EC" cat "$RUN/elo.csv" 2>/dev/null | wc -l) lines (a header and a line per version rated)"

# With no workers the learner waits, serving /status: ask it over the pod
# network (what the Service needs: it listens on every interface).
echo "== the workers scaled to 0, the learner replaced again (10 iterations)"
"$PY" "$TMP/podmanize.py" "$TMP/run6.yaml.k8s" "$TMP/workers.yaml" "$TMP/vol" workers nopvc
check "podman kube down of the worker pods" \
  down "$TMP/workers.yaml"
check "the learner's pod is played again with 10 iterations" replace_learner 8 10
check "it resumes from checkpoint 8" \
  wait_for 120 log_has 'resumed from .*ckpt-000008.pbck'
status() { podman exec "$EC" curl -fsS -m 3 "http://$LPOD:8080/status" 2>/dev/null; }
status_has() { status | grep -q -- "$1"; } # status_has REGEX
check "/status answers over the pod network: version 8 of 10" \
  wait_for 60 status_has '"version": *8,'
check "/status says 10 iterations" status_has '"iterations": *10,'
echo "/status: $(status | head -c 300)"
check "the liveness probe passes on the running learner" podman healthcheck run "$LC"

if [ "$FAIL" -ne 0 ]; then
  for c in $(podman ps -a --format '{{.Names}}' --filter "name=^$PREFIX" 2>/dev/null); do
    case "$c" in *-infra) continue ;; esac
    echo "---- $c (last 15 lines)"
    podman logs --tail 15 "$c" 2>&1
  done
fi

# --- teardown ------------------------------------------------------------

echo "== teardown"
check "podman kube down" \
  down "$TMP/learner10.yaml"
PLAYED=()
check "no pod of the test is left" test -z "$(podman pod ls -q --filter "name=^$PREFIX")"
check "the run's volume is removed" quiet podman volume rm "${PREFIX}runs"
check "the network is removed" quiet podman network rm "$NET"
finish
