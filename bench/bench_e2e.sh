#!/usr/bin/env bash
# bench_e2e.sh - end-to-end training speed: the same small Connect Four run
# (a) in one process (`probs train --inproc`), (b) distributed with one
# actor and one searcher, (c) distributed with two of each, all on this
# machine over loopback TCP. Per-phase figures come from each run's
# metrics.jsonl, summed over the iterations, and are printed as ratios
# against --inproc (and (c) against (b), to show how each phase scales).
#
#   bench/bench_e2e.sh [-p] [BIN_DIR]      (BIN_DIR default: build-rel/bin)
#
# The run: configs/connect4.yaml (the paper's settings) with
#   train.iterations      PB_E2E_ITERS     (3)
#   train.episodes_per_iter PB_E2E_EPISODES (200)
#   search.expansions     PB_E2E_E         (10)
#   search.max_depth      PB_E2E_M         (2)
#   the small model (2 conv x 16, 1 dense x 12), cpu, one libtorch thread
# and the config's item sizes (16 episodes per self-play item, 256 states
# per search item). The processes are started here, not by `probs train`,
# so that no evaluator runs beside them. Each configuration runs
# PB_E2E_REPEAT times (2) and every figure is the best of those runs: the
# machine is shared, and wall time measures the other load too.
# PB_E2E_TUNE=1 starts the workers with GLIBC_TUNABLES set as
# pb_nn_tune_malloc() sets the allocator (probs-actor calls it itself now;
# kept to compare with figures taken before). PB_E2E_KEEP=1 keeps the logs.
#
# Figures (positions/s unless said otherwise):
#   selfplay  positions / selfplay_s      train V  positions / train_v_s
#   search    distinct positions / search_s (states/s)
#   train Q   positions / train_q_s       overall  positions / iteration_s
# and, from the CPU time of the searcher processes, "2+2 vs 1+1 if
# CPU-bound": the search speed-up two searchers give when each has a core
# to itself (wall time shows it only on an otherwise idle machine).
# -p prints rows tab-separated (figure, value, unit, ratio, baseline) for
# bench/run; detail lines start with '#'. Exit status 1 if a run failed
# (its log is kept and named).
set -euo pipefail

parseable=0
if [[ ${1:-} == -p ]]; then
  parseable=1
  shift
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/build-rel/bin}
CONFIG=$ROOT/configs/connect4.yaml
ITERS=${PB_E2E_ITERS:-3}
EPISODES=${PB_E2E_EPISODES:-200}
E=${PB_E2E_E:-10}
M=${PB_E2E_M:-2}
TIMEOUT=${PB_E2E_TIMEOUT:-600}
REPEAT=${PB_E2E_REPEAT:-2}
TUNE=
if [[ ${PB_E2E_TUNE:-0} == 1 ]]; then
  # What pb_nn_tune_malloc() does, applied from outside to the worker
  # processes (redundant since probs-actor calls it itself).
  TUNE=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864
fi

for b in probs probs-learner probs-actor; do
  if [[ ! -x $BIN/$b ]]; then
    echo "bench_e2e: $BIN/$b not found (build first, or pass BIN_DIR)" >&2
    exit 2
  fi
done

export OMP_NUM_THREADS=1
CLK_TCK=$(getconf CLK_TCK)
TMP=$(mktemp -d /tmp/probs-bench-e2e-XXXXXX)
PIDS=()
keep=${PB_E2E_KEEP:-0}
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ $keep == 0 ]]; then rm -rf "$TMP"; else echo "# logs kept in $TMP"; fi
}
trap cleanup EXIT

SETS=(--set "train.iterations=$ITERS" --set "train.episodes_per_iter=$EPISODES"
      --set "search.expansions=$E" --set "search.max_depth=$M"
      --set model.device=cpu --set model.threads=1 --set net.http_port=0
      --set model.v.conv_layers=2 --set model.v.conv_channels=16
      --set model.v.dense_layers=1 --set model.v.dense_units=12
      --set model.q.conv_layers=2 --set model.q.conv_channels=16
      --set model.q.dense_layers=1 --set model.q.dense_units=12)

# A TCP port nobody listens on now (a small race with other programs is
# accepted: a failed bind makes the run fail loudly).
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    if ! ss -Htln "sport = :$p" 2>/dev/null | grep -q .; then
      echo "$p"
      return
    fi
  done
}

declare -A CPU # pid -> CPU seconds (user + system) last seen in /proc

# Remembers the CPU time of each live pid given (read with builtins only:
# this runs ten times a second).
sample_cpu() {
  local p st tck
  tck=$CLK_TCK
  for p in "$@"; do
    if [[ -r /proc/$p/stat ]] && read -r -a st </proc/"$p"/stat 2>/dev/null; then
      # Fields 14 and 15 (utime, stime); the name field has no spaces here.
      CPU[$p]=$(((st[13] + st[14]) * 100 / tck))
    fi
  done
}

# watch MAIN LIMIT [OTHER...]: waits up to LIMIT seconds for MAIN, then up
# to 30 s for the others (they leave by themselves when the learner says
# STOPPING), sampling the CPU time of all of them. Returns MAIN's exit
# status (124 after a timeout; whatever is still running is then killed).
watch() {
  local main=$1 limit=$2 t=0 rc=0 p alive
  shift 2
  while kill -0 "$main" 2>/dev/null; do
    sample_cpu "$main" "$@"
    if ((t >= limit * 10)); then
      kill -9 "$main" 2>/dev/null || true
      rc=124
      break
    fi
    sleep 0.1
    t=$((t + 1))
  done
  if [[ $rc == 0 ]]; then wait "$main" || rc=$?; else wait "$main" 2>/dev/null || true; fi
  WALL_END=$(now)
  for ((t = 0; t < 300; t++)); do
    alive=()
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive+=("$p"); done
    ((${#alive[@]} == 0)) && break
    sample_cpu "${alive[@]}"
    sleep 0.1
  done
  for p in "$@"; do
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  return $rc
}

now() { date +%s.%N; }
cpu_s() { awk -v c="${CPU[$1]:-0}" 'BEGIN { printf "%.2f", c / 100 }'; }

run_inproc() {
  local dir=$TMP/inproc.$rep t0 rc=0 p
  t0=$(now)
  "$BIN/probs" train "$CONFIG" --inproc --run-dir "$dir" "${SETS[@]}" \
    >"$dir.out" 2>&1 &
  p=$!
  PIDS+=("$p")
  watch "$p" "$TIMEOUT" || rc=$?
  WALL=$(awk -v a="$t0" -v b="$WALL_END" 'BEGIN { printf "%.2f", b - a }')
  CPUS="process $(cpu_s "$p")"
  if [[ $rc != 0 ]]; then
    keep=1
    echo "bench_e2e: probs train --inproc failed ($rc): $dir.out" >&2
    return 1
  fi
}

# run_dist NAME ACTORS SEARCHERS
run_dist() {
  local name=$1 na=$2 ns=$3 dir=$TMP/$1.$rep pw pp i rc=0 t0
  pw=$(free_port)
  pp=$(free_port)
  while [[ $pp == "$pw" ]]; do pp=$(free_port); done
  local net=(--set "net.work_endpoint=tcp://127.0.0.1:$pw"
             --set "net.pub_endpoint=tcp://127.0.0.1:$pp")
  mkdir -p "$dir"
  local actors=() searchers=()
  t0=$(now)
  for ((i = 1; i <= na; i++)); do
    env ${TUNE:+GLIBC_TUNABLES=$TUNE} \
      "$BIN/probs-actor" "$CONFIG" --role selfplay --id "actor-$i" "${SETS[@]}" \
      "${net[@]}" >"$dir/actor-$i.out" 2>&1 &
    actors+=($!)
    PIDS+=($!)
  done
  for ((i = 1; i <= ns; i++)); do
    env ${TUNE:+GLIBC_TUNABLES=$TUNE} \
      "$BIN/probs-actor" "$CONFIG" --role search --id "searcher-$i" "${SETS[@]}" \
      "${net[@]}" >"$dir/searcher-$i.out" 2>&1 &
    searchers+=($!)
    PIDS+=($!)
  done
  "$BIN/probs-learner" "$CONFIG" --run-dir "$dir" "${SETS[@]}" "${net[@]}" \
    >"$dir/learner.out" 2>&1 &
  local lp=$!
  PIDS+=("$lp")
  watch "$lp" "$TIMEOUT" "${actors[@]}" "${searchers[@]}" || rc=$?
  WALL=$(awk -v a="$t0" -v b="$WALL_END" 'BEGIN { printf "%.2f", b - a }')
  CPUS="learner $(cpu_s "$lp"), actors"
  for i in "${actors[@]}"; do CPUS+=" $(cpu_s "$i")"; done
  CPUS+=", searchers"
  SRCH_SUM=0
  SRCH_MAX=0
  for i in "${searchers[@]}"; do
    CPUS+=" $(cpu_s "$i")"
    SRCH_SUM=$((SRCH_SUM + ${CPU[$i]:-0}))
    ((${CPU[$i]:-0} > SRCH_MAX)) && SRCH_MAX=${CPU[$i]:-0}
  done
  if [[ $rc != 0 ]]; then
    keep=1
    echo "bench_e2e: distributed run $name failed ($rc): $dir/learner.out" >&2
    return 1
  fi
}

# Sums of the iteration lines of a metrics.jsonl, one "key value" a line.
sums() {
  awk '
    /"event":"iteration"/ {
      n++
      for (i = 1; i <= nk; i++) {
        if (match($0, "\"" k[i] "\":[-+0-9.eE]+")) {
          v = substr($0, RSTART + length(k[i]) + 3, RLENGTH - length(k[i]) - 3)
          s[k[i]] += v
        }
      }
    }
    BEGIN {
      nk = split("positions distinct_positions selfplay_s train_v_s search_s train_q_s checkpoint_s iteration_s", k, " ")
    }
    END {
      print "iterations", n + 0
      for (i = 1; i <= nk; i++) print k[i], s[k[i]] + 0
    }' "$1"
}

# get FILE KEY
get() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

row() {
  if [[ $parseable == 1 ]]; then
    printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5"
  else
    printf '%-40s %12.1f %-12s %9s  %s\n' "$1" "$2" "$3" "$4" "$5"
  fi
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print 0 }'; }

echo "# bench_e2e: connect4, $ITERS iterations x $EPISODES episodes, E=$E M=$M, small model, cpu, $(getconf _NPROCESSORS_ONLN) cores, best of $REPEAT${TUNE:+, workers with GLIBC_TUNABLES=$TUNE}; load average $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A RATE SCPU SMAX
names=(inproc dist-1+1 dist-2+2)
# max A B
max() { awk -v a="${1:-0}" -v b="$2" 'BEGIN { print (b > a ? b : a) }'; }
for ((rep = 1; rep <= REPEAT; rep++)); do
  for name in "${names[@]}"; do
    case $name in
      inproc) run_inproc || exit 1 ;;
      dist-1+1) run_dist "$name" 1 1 || exit 1 ;;
      dist-2+2) run_dist "$name" 2 2 || exit 1 ;;
    esac
    f=$TMP/$name.$rep.sums
    sums "$TMP/$name.$rep/metrics.jsonl" >"$f"
    if [[ $(get "$f" iterations) != "$ITERS" ]]; then
      keep=1
      echo "bench_e2e: $name wrote $(get "$f" iterations) of $ITERS iterations" >&2
      exit 1
    fi
    pos=$(get "$f" positions)
    RATE[$name,selfplay]=$(max "${RATE[$name,selfplay]:-}" "$(div "$pos" "$(get "$f" selfplay_s)")")
    RATE[$name,train_v]=$(max "${RATE[$name,train_v]:-}" "$(div "$pos" "$(get "$f" train_v_s)")")
    RATE[$name,search]=$(max "${RATE[$name,search]:-}" "$(div "$(get "$f" distinct_positions)" "$(get "$f" search_s)")")
    RATE[$name,train_q]=$(max "${RATE[$name,train_q]:-}" "$(div "$pos" "$(get "$f" train_q_s)")")
    RATE[$name,overall]=$(max "${RATE[$name,overall]:-}" "$(div "$pos" "$(get "$f" iteration_s)")")
    printf '# run %d %s: %s positions (%s distinct); seconds: selfplay %.2f, train V %.2f, search %.2f, train Q %.2f, checkpoint %.2f, iterations %.2f, processes %s wall; CPU seconds: %s\n' \
      "$rep" "$name" "$pos" "$(get "$f" distinct_positions)" "$(get "$f" selfplay_s)" \
      "$(get "$f" train_v_s)" "$(get "$f" search_s)" "$(get "$f" train_q_s)" \
      "$(get "$f" checkpoint_s)" "$(get "$f" iteration_s)" "$WALL" "$CPUS"
    if [[ $name == dist-* ]]; then
      # Lowest searcher CPU over the repeats: the figure least touched by
      # other load (in hundredths of a second).
      if [[ -z ${SCPU[$name]:-} ]] || ((SRCH_MAX < ${SMAX[$name]})); then
        SCPU[$name]=$SRCH_SUM
        SMAX[$name]=$SRCH_MAX
      fi
    fi
    if [[ $keep == 0 ]]; then rm -rf "${TMP:?}/$name.$rep"; fi
  done
done

for phase in selfplay search train_v train_q overall; do
  unit=positions/s
  [[ $phase == search ]] && unit=states/s
  base=${RATE[inproc,$phase]}
  row "e2e $phase: inproc" "$base" "$unit" "1.00x" "inproc"
  for name in dist-1+1 dist-2+2; do
    v=${RATE[$name,$phase]}
    row "e2e $phase: $name" "$v" "$unit" "$(ratio "$v" "$base")" "inproc"
  done
  v=${RATE[dist-2+2,$phase]}
  row "e2e $phase: 2+2 vs 1+1" "$(div "$v" "${RATE[dist-1+1,$phase]}")" "x" \
    "$(ratio "$v" "${RATE[dist-1+1,$phase]}")" "dist-1+1"
done
# What two searchers would give with a core each: the CPU time one searcher
# needed for all the search, over the CPU time of the busier of two. Wall
# time cannot show it while other programs hold the cores.
one=${SCPU[dist-1+1]} two=${SMAX[dist-2+2]}
row "e2e search: 2+2 vs 1+1 if CPU-bound" "$(div "$one" "$two")" "x" \
  "$(ratio "$one" "$two")" "dist-1+1 searcher CPU"
printf '# searcher CPU seconds: 1+1 %s; 2+2 %s in all, %s the busier\n' \
  "$(awk -v c="$one" 'BEGIN { printf "%.2f", c / 100 }')" \
  "$(awk -v c="${SCPU[dist-2+2]}" 'BEGIN { printf "%.2f", c / 100 }')" \
  "$(awk -v c="$two" 'BEGIN { printf "%.2f", c / 100 }')"
