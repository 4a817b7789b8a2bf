#!/usr/bin/env bash
# test_k8s.sh BIN_DIR SOURCE_DIR - the Kubernetes manifests of deploy/k8s.
#
#  1. kubectl, client side, no cluster: `kubectl kustomize` renders
#     deploy/k8s (with keys made by `probs keys DIR --workers 3`, as the
#     docs say), the same with per-pod-keys/ turned on, and the test
#     overlay; kubectl reads every object (`label --local`) and decodes the
#     Deployments into its typed objects (`set env --local`: field types,
#     quantities); structural checks in Python (one Recreate learner with
#     the evaluator in its pod on the claim, the headless Service's ports,
#     probes, the non-root user, requests, one image, each pod mounting only
#     its role's keys from the Secret, a key per worker Deployment, all of
#     them authorized; with per-pod keys, the searchers' shared claim).
#     Without keys it must fail. No kubectl: installs Debian's
#     kubernetes-client when root, else skips everything else.
#  2. podman kube play, the way a cluster would run them: the test overlay
#     (connect4-smoke, 6 iterations, 2 searcher pods) with a unique name
#     prefix and the image of this tree, on a podman network of its own with
#     DNS (podman runs no Services; pods find the learner by its pod name).
#     The Secret's files are mounted as the kubelet would (podman 4.3 mounts
#     them base64-encoded): the learner's, each worker Deployment's and the
#     evaluator's keys, as the manifests pick them. Checks: CURVE with the
#     three keys, the workers join, the run trains to the end as uid 10001
#     on the claim's volume, the evaluator rates it (elo.csv in the volume),
#     the liveness probe passes. Then the learner's and the searchers' pods
#     are replaced (what `kubectl apply` of a changed setting does) by
#     per-pod-keys ones with more iterations, the actor staying: the learner
#     resumes from its newest checkpoint on the volume, each new searcher
#     pod authorizes a key of its own, the actor reconnects, the run ends at
#     the new count and is rated. With the workers gone (scaled to 0) the
#     learner is replaced again: it resumes and answers /status over the pod
#     network, and its liveness probe passes. Then `podman kube down`, and
#     the volumes and the network are removed.
#     Needs podman (tests/containers.sh finds it and builds the image);
#     prints "SKIPPED: why" for this part where there is none.
#
# PROBS_K8S_IMAGE=IMAGE uses that image instead of building this tree's.
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: test_k8s.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
BIN=$(cd "$1" && pwd) || exit 2
SRC=$(cd "$2" && pwd) || exit 2
K8S="$SRC/deploy/k8s"

. "$SRC/tests/cli_lib.sh" # ok, bad, check, skipped, wait_for, finish
# done_now: finish, and exit with its status (a part that cannot go on).
done_now() {
  finish
  exit
}

not() { ! "$@"; }
quiet() { "$@" >/dev/null 2>&1; }

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
  done_now
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
perpod = len(sys.argv) > 2 and sys.argv[2] == "perpod"
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
# entrypoint and the programs look for; with per-pod keys the searchers make
# their own on the shared claim.
sdata = {k: base64.b64decode(v).decode() for k, v in secret.get("data", {}).items()}
def pub_of(text):
    for line in text.splitlines():
        if line.startswith("public-key "):
            return line.split()[1]
got, at_keys, claims_of, cmd_of = {}, {}, {}, {}
for name, d in sorted(deps.items()):
    spec = d["spec"]["template"]["spec"]
    vols = {v["name"]: v for v in spec["volumes"]}
    for c in spec["containers"]:
        files = {}
        cmd_of[c["name"]] = " ".join(c.get("command", []))
        claims_of[c["name"]] = {}
        for m in c.get("volumeMounts", []):
            v = vols[m["name"]]
            if m["mountPath"] == "/keys":
                at_keys[c["name"]] = "secret" if "secret" in v else "emptyDir" if "emptyDir" in v else "?"
            if "persistentVolumeClaim" in v:
                claims_of[c["name"]][v["persistentVolumeClaim"]["claimName"]] = m["mountPath"]
            s = v.get("secret")
            if s is None:
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
secret_roles = ("actor", "evaluator") if perpod else ("actor", "searcher", "evaluator")
worker_pubs = {}
for role in secret_roles:
    f = got.get(role, {})
    check("%s gets only worker.key and learner.pub, at /keys" % role,
          sorted(f) == ["learner.pub", "worker.key"] and "secret-key " in f.get("worker.key", "")
          and at_keys.get(role) == "secret")
    worker_pubs[role] = pub_of(f.get("worker.key", ""))
check("%s have keys of their own" % ", ".join(secret_roles),
      None not in worker_pubs.values() and len(set(worker_pubs.values())) == len(secret_roles))
auth = set(l.strip() for l in lk.get("authorized_keys", "").splitlines()
           if l.strip() and not l.startswith("#"))
check("the Secret's authorized_keys lets in these keys%s" % ("" if perpod else ", and no other"),
      auth >= set(worker_pubs.values()) if perpod else auth == set(worker_pubs.values()))
check("the workers pin the learner's public key",
      all(pub_of(got[r]["learner.pub"]) == pub_of(lk.get("learner.key", ""))
          for r in worker_pubs if "learner.pub" in got.get(r, {})))
if perpod:
    kc = one("PersistentVolumeClaim", "searcher-keys")
    check("per-pod keys: a ReadWriteMany claim 'searcher-keys'",
          kc is not None and kc["spec"].get("accessModes") == ["ReadWriteMany"])
    check("per-pod keys: the searchers get no key from the Secret, an emptyDir at /keys",
          got.get("searcher") == {} and at_keys.get("searcher") == "emptyDir")
    check("per-pod keys: the searchers and the learner mount the claim at /keys-shared",
          claims_of["searcher"].get("searcher-keys") == "/keys-shared" and
          claims_of["learner"].get("searcher-keys") == "/keys-shared")
    check("per-pod keys: a searcher authorizes a key named after its pod",
          "--add-worker \"$me\"" in cmd_of["searcher"] and "me=$HOSTNAME" in cmd_of["searcher"])
    check("per-pod keys: the learner's authorized_keys is the claim's",
          at_keys.get("learner") == "emptyDir" and
          'ln -sfn "$K/authorized_keys" "$PROBS_KEYS/authorized_keys"' in cmd_of["learner"])
    check("per-pod keys: the evaluator and the actor are unchanged",
          "searcher-keys" not in claims_of["evaluator"] and "searcher-keys" not in claims_of["actor"])
sys.exit(1 if fails else 0)
PYEOF

# podmanize IN OUT VOLDIR DEPLOYMENTS CLAIMS: the rendered manifests as
# podman 4.3's `kube play` can run them, with only the Deployments and
# claims named (comma lists of the names before the prefix, or "all", or
# "none"). The Secret's files are written under VOLDIR as the kubelet would
# mount them (decoded, items renamed, defaultMode, group fsGroup) and each
# secret volume becomes a read-only hostPath; Secrets and Services are left
# out (podman mounts the one base64-encoded and ignores the other). An
# emptyDir gets a unique name (podman makes a volume of that name, shared by
# the replicas of a Deployment).
cat >"$TMP/podmanize.py" <<'PYEOF'
import base64, os, sys, yaml

src, out, voldir, deploys, claims = sys.argv[1:6]
def wanted(name, which):
    return which == "all" or any(name.endswith("-" + w) or name == w for w in which.split(","))
docs = [d for d in yaml.safe_load_all(open(src)) if d]
secrets = {d["metadata"]["name"]: d.get("data", {}) for d in docs if d["kind"] == "Secret"}
keep = []
for d in docs:
    kind, name = d["kind"], d["metadata"]["name"]
    if kind in ("Secret", "Service"):
        continue
    if kind == "PersistentVolumeClaim" and not wanted(name, claims):
        continue
    if kind == "Deployment":
        if not wanted(name, deploys):
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
        # podman names an emptyDir's volume after it, globally: make it
        # unique (it is removed with the pod).
        renamed = {}
        for v in spec.get("volumes", []):
            if "emptyDir" in v:
                renamed[v["name"]] = v["name"] = name + "-" + v["name"]
        for c in spec.get("containers", []):
            for m in c.get("volumeMounts", []):
                m["name"] = renamed.get(m["name"], m["name"])
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
  # structure RENDERED MODE LABEL: check.py's lines counted as ours.
  structure() {
    local line rc nfail=0
    "$PY" "$TMP/check.py" "$1" "$2" >"$1.checks" 2>&1
    rc=$?
    while IFS= read -r line; do
      case "$line" in
        ok:*) ok "$3${line#ok: }" ;;
        FAIL:*) bad "$3${line#FAIL: }"; nfail=$((nfail + 1)) ;;
        *) echo "$line" ;;
      esac
    done <"$1.checks"
    [ "$rc" -eq 0 ] || [ "$nfail" -gt 0 ] || bad "$3the structural checks ended with status $rc"
  }
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
    [ -s "$TMP/render.yaml" ] && structure "$TMP/render.yaml" default ""
    # The per-pod-keys variant: deploy/k8s with its lines uncommented.
    cp -r "$TMP/k8s" "$TMP/k8s-perpod"
    sed -i 's/^# resources:$/resources:/; s/^# patchesStrategicMerge:$/patchesStrategicMerge:/;
      s|^# - per-pod-keys/|- per-pod-keys/|' "$TMP/k8s-perpod/kustomization.yaml"
    if kc kustomize "$TMP/k8s-perpod" >"$TMP/render-perpod.yaml" 2>"$TMP/render-perpod.err"; then
      ok "kubectl kustomize deploy/k8s with per-pod-keys renders ($(grep -c '^kind:' "$TMP/render-perpod.yaml") objects)"
      n=$(kc set env --local -f "$TMP/render-perpod.yaml" PROBS_CHECK=1 -o name 2>/dev/null | wc -l)
      check "kubectl decodes its Deployments into typed objects ($n)" test "$n" -eq 3
      structure "$TMP/render-perpod.yaml" perpod "per-pod-keys: "
    else
      bad "kubectl kustomize deploy/k8s with per-pod-keys renders"
      head -5 "$TMP/render-perpod.err"
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
  done_now
fi
if ! pb_engine; then
  skipped "podman kube play: $PB_ENGINE_WHY"
  done_now
fi
if [ "$PB_ENGINE" != podman ]; then
  PB_ENGINE=""
  skipped "podman kube play: the container engine is docker, not podman"
  done_now
fi
if [ -n "${PROBS_K8S_IMAGE:-}" ]; then
  PB_IMAGE=$PROBS_K8S_IMAGE
  echo "image: $PB_IMAGE (PROBS_K8S_IMAGE)"
elif ! pb_image; then
  bad "the image builds"
  done_now
fi
podman image inspect "$PB_IMAGE" >/dev/null 2>&1 || { bad "image $PB_IMAGE exists"; done_now; }
if [ ! -s "$TMP/k8s/test/keys/learner.key" ]; then
  make_keys "$TMP/k8s/test/keys" || { bad "probs keys for the test overlay"; done_now; }
fi

# The test's own overlay on deploy/k8s/test: unique names, this image, and
# the learner's pod name for PROBS_LEARNER; with "perpod", per-pod-keys/'s
# claim and patches too (copied: kustomize reads only files below an
# overlay). render ITERATIONS OUT [perpod]: OUT.k8s, the rendered manifests.
img_name=${PB_IMAGE%:*}
img_tag=${PB_IMAGE##*:}
case "$img_name" in */*) ;; *) img_name="localhost/$img_name" ;; esac
mkdir -p "$TMP/play" "$TMP/vol"
cp "$TMP/k8s/per-pod-keys/"*.yaml "$TMP/play/"
render() {
  {
    printf 'bases:\n- ../k8s/test\nnamePrefix: %s\n' "$PREFIX"
    printf 'images:\n- name: probs\n  newName: %s\n  newTag: "%s"\n' "$img_name" "$img_tag"
    printf 'configMapGenerator:\n- name: probs-env\n  behavior: merge\n  literals:\n'
    printf '  - PROBS_LEARNER=%slearner-pod-0\n  - PROBS_ITERATIONS=%s\n' "$PREFIX" "$1"
    if [ "${3:-}" = perpod ]; then
      printf 'resources:\n- claim.yaml\npatchesStrategicMerge:\n- learner.yaml\n- searcher.yaml\n'
    fi
  } >"$TMP/play/kustomization.yaml"
  kc kustomize "$TMP/play" >"$2.k8s" 2>"$2.err" || { cat "$2.err"; return 1; }
}
# podmanize RENDERED OUT DEPLOYMENTS CLAIMS
podmanize() { "$PY" "$TMP/podmanize.py" "$1" "$2" "$TMP/vol" "$3" "$4"; }
RUN=/runs/k8s-smoke
LPOD="${PREFIX}learner-pod-0"
LC="$LPOD-learner"
EC="$LPOD-evaluator"
llog() { podman logs "$LC" 2>&1; }
log_has() { llog | has "$1"; } # log_has REGEX: the learner's log has it
since_start() { # since_start REGEX: seconds from the learner's start to the first line matching
  llog | "$PY" -c 'import re, sys, datetime as d
t0 = None
for line in sys.stdin:
    m = re.match(r"(\d{4}-\d\d-\d\dT[\d:.]+)Z", line)
    if not m:
        continue
    t = d.datetime.fromisoformat(m.group(1))
    t0 = t0 or t
    if re.search(sys.argv[1], line):
        print("%.1f" % (t - t0).total_seconds())
        break
else:
    print("?")' "$1"
}
keys_accepted() { # distinct worker keys the learner let in
  llog | grep -o 'CURVE: worker key [^ ]* from [^ ]* accepted' | awk '{print $4}' | sort -u | wc -l
}
elo_has() { # elo_has VERSION: elo.csv on the volume has a row for it
  podman exec "$EC" cat "$RUN/elo.csv" 2>/dev/null | grep "^$1," >/dev/null
}
down() { timeout 120 podman kube down "$1" >"$1.down" 2>&1; } # down FILE
down2() { down "$1" && down "$2"; }
play() { # play FILE
  PLAYED+=("$1")
  timeout 300 podman kube play --network "$NET" "$1" >"$1.out" 2>&1 || { tail -5 "$1.out"; return 1; }
}

if ! podman network create "$NET" >/dev/null 2>&1; then
  bad "podman network create $NET"
  done_now
fi
# The learner and the searchers first: with no actor the learner waits in
# its first self-play phase, so that both searcher pods join before the run
# (seconds long) is over; then the actor.
if ! render 6 "$TMP/run6.yaml" ||
  ! podmanize "$TMP/run6.yaml.k8s" "$TMP/run6-ls.yaml" learner,searcher runs ||
  ! podmanize "$TMP/run6.yaml.k8s" "$TMP/run6-a.yaml" actor none; then
  bad "the test overlay renders for podman"
  done_now
fi
searchers_joined() { # searchers_joined N: N searcher pods (hosts) joined
  [ "$(llog | grep -o "searcher [^ ]* joined (host [^,]*" | sed 's/.*host //' | sort -u | wc -l)" -ge "$1" ]
}
t0=$SECONDS
check "podman kube play: the claim, the learner (+ evaluator) and 2 searcher pods" \
  play "$TMP/run6-ls.yaml"
check "the learner says CURVE is on with 3 authorized worker keys" \
  wait_for 120 log_has 'CURVE on: .*3 authorized worker key'
check "both searcher pods join" wait_for 180 searchers_joined 2
echo "podman kube play to both searchers joined: $((SECONDS - t0)) s"
t0=$SECONDS
check "podman kube play: 1 actor pod" play "$TMP/run6-a.yaml"
npods=$(podman pod ls -q --filter "name=^$PREFIX" | wc -l)
check "4 pods run ($npods)" test "$npods" -eq 4
check "the learner trains its first iteration" wait_for 240 log_has 'iteration 1 done'
t_first=$((SECONDS - t0))
check "run 1 trains to the end: all 6 iterations" wait_for 300 log_has 'all 6 iterations done'
t_done=$((SECONDS - t0))
echo "podman kube play of the actor to the first iteration: ${t_first} s; to the end of 6 iterations: ${t_done} s"
echo "from the learner's first line: the searchers joined after $(since_start 'searcher .* joined') s," \
  "the actor after $(since_start 'actor .* joined') s, iteration 1 was done after $(since_start 'iteration 1 done') s"
check "the actor pod joined" log_has 'actor .* joined'
n=$(keys_accepted)
check "three distinct worker keys were let in (actor, searcher, evaluator: $n)" test "$n" -eq 3
check "no key was refused" not log_has 'CURVE: .* refused'
check "the evaluator rates the run: elo.csv on the volume has version 6" wait_for 180 elo_has 6
check "the run directory is written by uid 10001" \
  test "$(podman exec "$LC" stat -c %u "$RUN/checkpoints/ckpt-000006.pbck" 2>/dev/null)" = 10001
# The learner's liveness probe (podman makes a healthcheck of it; nothing
# runs it on its own here). The finished learner idles and stays healthy.
if [ "$(podman inspect --format '{{.Config.Healthcheck}}' "$LC" 2>/dev/null)" != "<nil>" ]; then
  check "the finished learner's liveness probe passes (podman healthcheck run)" \
    wait_for 60 podman healthcheck run "$LC"
else
  check "the finished learner's probe command passes (probs-entrypoint health)" \
    wait_for 60 podman exec "$LC" /usr/local/bin/probs-entrypoint health
fi

# The learner's and the searchers' pods are replaced (what `kubectl apply`
# of a changed setting does), now with per-pod searcher keys; the actor
# stays. The new learner raises the iterations and resumes from the volume.
echo "== resume with 8 iterations; searchers replaced by per-pod-keys ones, the actor stays"
t0=$SECONDS
if render 8 "$TMP/run8.yaml" perpod &&
  podmanize "$TMP/run8.yaml.k8s" "$TMP/run8.yaml" learner,searcher searcher-keys &&
  true; then
  check "podman kube down of the learner's and the searchers' pods" down "$TMP/run6-ls.yaml"
  check "the run's volume stays" podman volume exists "${PREFIX}runs"
  check "podman kube play of the learner and 2 searchers with per-pod keys, 8 iterations" \
    play "$TMP/run8.yaml"
else
  bad "the test overlay renders with per-pod-keys"
fi
check "the learner resumes from checkpoint 6 on the volume" \
  wait_for 120 log_has 'resumed from .*ckpt-000006.pbck'
check "the workers (re)connect and the run ends at 8 iterations" \
  wait_for 300 log_has 'all 8 iterations done'
echo "resumed run: 2 more iterations in $((SECONDS - t0)) s"
restarts=$(podman inspect --format '{{.RestartCount}}' "${PREFIX}actor-pod-0-actor" 2>/dev/null)
echo "the actor's container was restarted ${restarts:-?} time(s) by its restart policy (it exits 0 on STOPPING)"
check "the actor reconnected to the new learner" log_has 'actor .* joined'
echo "the actor rejoined $(since_start 'actor .* joined') s after the new learner started"
AK="$(podman exec "$LC" cat /keys-shared/authorized_keys 2>/dev/null)"
n=$(grep -c "^# ${PREFIX}searcher-pod-[01]\$" <<<"$AK")
check "each searcher pod authorized a key of its own on the shared claim ($n)" test "$n" -eq 2
# The searcher pods' public keys, as they published them on the claim.
pubkey() { podman exec "$LC" sed -n 's/^public-key //p' "/keys-shared/$1.pub" 2>/dev/null; }
pk0=$(pubkey "${PREFIX}searcher-pod-0")
pk1=$(pubkey "${PREFIX}searcher-pod-1")
check "the two searcher pods' keys differ" test -n "$pk0" -a -n "$pk1" -a "$pk0" != "$pk1"
accepted=$(llog | grep -o 'CURVE: worker key [^ ]* from' | awk '{print $4}' | sort -u)
# (The run may end before the second searcher pod got in.)
check "the learner let in a searcher pod's own key" \
  grep -qxF -e "$pk0" -e "$pk1" <<<"$accepted"
check "and not the Secret's searcher key (worker-2)" \
  not grep -qxF -- "$(sed -n 's/^public-key //p' "$TMP/k8s/test/keys/worker-2.pub")" <<<"$accepted"
check "no secret key on the shared claim" \
  test -z "$(podman exec "$LC" bash -c 'ls /keys-shared/*.key 2>/dev/null')"
check "the learner's key directory links authorized_keys to the claim's" \
  test "$(podman exec "$LC" readlink /keys/authorized_keys 2>/dev/null)" = /keys-shared/authorized_keys
check "the evaluator rates version 8" wait_for 180 elo_has 8
echo "elo.csv: $(podman exec "$EC" cat "$RUN/elo.csv" 2>/dev/null | wc -l) lines (a header and a line per version rated)"

# With no workers the learner waits, serving /status: ask it over the pod
# network (what the Service needs: it listens on every interface).
echo "== the workers scaled to 0, the learner replaced again (10 iterations)"
if render 10 "$TMP/run10.yaml" perpod &&
  podmanize "$TMP/run10.yaml.k8s" "$TMP/run10.yaml" learner none &&
  podmanize "$TMP/run8.yaml.k8s" "$TMP/learner-searchers.yaml" learner,searcher none; then
  check "podman kube down of every pod" down2 "$TMP/run6-a.yaml" "$TMP/learner-searchers.yaml"
  check "podman kube play of the learner with 10 iterations" play "$TMP/run10.yaml"
else
  bad "the test overlay renders with 10 iterations"
fi
check "it resumes from checkpoint 8" wait_for 120 log_has 'resumed from .*ckpt-000008.pbck'
status() { podman exec "$EC" curl -fsS -m 3 "http://$LPOD:8080/status" 2>/dev/null; }
status_has() { status | has "$1"; } # status_has REGEX
check "/status answers over the pod network: version 8" wait_for 60 status_has '"version": *8,'
check "/status says 10 iterations" status_has '"iterations": *10,'
echo "/status: $(status | head -c 200)"
check "the liveness probe passes on the running learner" podman healthcheck run "$LC"
n=$(podman exec "$LC" grep -vc '^#' /keys-shared/authorized_keys 2>/dev/null)
check "a restarted learner adds no key twice to the claim's authorized_keys ($n keys)" test "$n" -eq 5

if [ "$FAIL" -ne 0 ]; then
  for c in $(podman ps -a --format '{{.Names}}' --filter "name=^$PREFIX" 2>/dev/null); do
    case "$c" in *-infra) continue ;; esac
    echo "---- $c (last 15 lines)"
    podman logs --tail 15 "$c" 2>&1
  done
fi

# --- teardown ------------------------------------------------------------

echo "== teardown"
check "podman kube down" down "$TMP/run10.yaml"
PLAYED=()
check "no pod of the test is left" test -z "$(podman pod ls -q --filter "name=^$PREFIX")"
check "the volumes are removed" quiet podman volume rm "${PREFIX}runs" "${PREFIX}searcher-keys"
check "the network is removed" quiet podman network rm "$NET"
done_now
