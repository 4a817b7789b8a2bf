#!/usr/bin/env bash
# search_elo.sh - Elo of a run's checkpoints played with a search agent,
# against anchored opponents (docs/results.md, "Othello with search at play
# time"). The evaluator rates the greedy network; this rates the search
# agents a user plays against (`abnet:`, `mcts:`, `beam:`).
#
#   scripts/search_elo.sh RUN_DIR VERSIONS AGENT ANCHORS
#   scripts/search_elo.sh runs/exp-oth 0,20,40 'abnet:CKPT,nodes=500' \
#       alphabeta:3=1427,alphabeta:4=1579
#
# For each version V of VERSIONS it plays AGENT (CKPT replaced by the
# version's checkpoint) against every opponent of ANCHORS with `probs
# match` (GAMES games each, default 100, half with each colour, 2 random
# opening plies, THREADS threads, default 2), appends the W/D/L lines to
# RUN_DIR/search-elo-LABEL.txt (LABEL: AGENT without CKPT, or $LABEL) in
# elo-calibrate's pair format, and fits the version's rating against the
# anchors with scripts/elo_anchored.py (as the evaluator rates a
# checkpoint) into RUN_DIR/search-elo-LABEL.csv (version, minutes, elo,
# elo_lo, elo_hi, score, games; elo empty when the agent won or lost every
# game; scripts/plot_runs.py draws it). Minutes are the checkpoint's wall
# time since version 0.
# The game comes from RUN_DIR/config.yaml. Exits non-zero on the first
# failing match.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 4 ] || { sed -n '2,23p' "$0" >&2; exit 2; }
DIR=$1 VERSIONS=$2 AGENT=$3 ANCHORS=$4
BIN=${BIN:-build/bin} GAMES=${GAMES:-100} THREADS=${THREADS:-2}
case $AGENT in *CKPT*) ;; *) echo "search_elo.sh: AGENT needs CKPT" >&2; exit 2 ;; esac
GAME=$(sed -n 's/^game: *"\{0,1\}\([a-z0-9]*\).*/\1/p' "$DIR/config.yaml" | head -1)
[ -n "$GAME" ] || { echo "search_elo.sh: no game in $DIR/config.yaml" >&2; exit 2; }
LABEL=${LABEL:-$(printf '%s' "${AGENT/CKPT/}" | tr -c 'A-Za-z0-9.\n' '_')}
OUT=$DIR/search-elo-$LABEL.txt CSV=$DIR/search-elo-$LABEL.csv
[ -f "$CSV" ] || echo "version,minutes,elo,elo_lo,elo_hi,score,games" >"$CSV"
t0=$(stat -c %Y "$DIR/checkpoints/ckpt-000000.pbck")
echo "# $AGENT against $ANCHORS, $GAMES games each, $GAME" >>"$OUT"
printf '%-8s %8s  %s\n' version minutes "Elo [95%]  (score against each)"
for v in ${VERSIONS//,/ }; do
  ck=$(printf '%s/checkpoints/ckpt-%06d.pbck' "$DIR" "$v")
  [ -f "$ck" ] || { echo "search_elo.sh: no $ck" >&2; exit 1; }
  min=$(awk -v s="$(( $(stat -c %Y "$ck") - t0 ))" 'BEGIN { printf "%.1f", s / 60 }')
  pairs=$(mktemp)
  scores=""
  for item in ${ANCHORS//,/ }; do
    opp=${item%=*}
    res=$("$BIN/probs" match --game "$GAME" --a "${AGENT//CKPT/$ck}" --b "$opp" \
            --games "$GAMES" --threads "$THREADS" --opening-random 2 | tail -1) ||
      { echo "search_elo.sh: probs match against $opp failed" >&2; rm -f "$pairs"; exit 1; }
    w=$(sed -n 's/.*W=\([0-9]*\).*/\1/p' <<<"$res")
    d=$(sed -n 's/.*D=\([0-9]*\).*/\1/p' <<<"$res")
    l=$(sed -n 's/.*L=\([0-9]*\).*/\1/p' <<<"$res")
    [ -n "$w" ] || { echo "search_elo.sh: match failed: $res" >&2; rm -f "$pairs"; exit 1; }
    printf 'v%s %s %s %s %s\n' "$v" "$opp" "$w" "$d" "$l" | tee -a "$OUT" >>"$pairs"
    scores="$scores $opp $w-$d-$l"
  done
  fit=$(scripts/elo_anchored.py "$ANCHORS" "v$v" "$pairs")
  rm -f "$pairs"
  # "vV: R [LO, HI] from N games ... score S" or "vV: no finite rating (S of N ...)"
  awk -v v="$v" -v m="$min" '{ gsub(/[][,()]/, " ") }
    $2 == "no" { print v "," m ",,,," $5 "," $7; next }
    { print v "," m "," $2 "," $3 "," $4 "," $NF "," $6 }' <<<"$fit" >>"$CSV"
  printf '%-8s %8s  %s  (%s)\n' "v$v" "$min" "${fit#*: }" "${scores# }"
done
