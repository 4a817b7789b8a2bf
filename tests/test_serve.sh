#!/usr/bin/env bash
# test_serve.sh BIN_DIR SOURCE_DIR - `probs serve RUN_DIR`, the dashboard of
# a finished run without its learner, in a real headless browser (Debian's
# chromium), as test_web_browser.sh does the live page. A Connect Four run
# of 2 iterations (probs train --inproc) rated by the evaluator, then:
#   - bad input: no RUN_DIR, a directory that is not a run directory, one
#     that does not exist, a bad port, a checkpoint that does not exist, a
#     port in use: a message saying so and a non-zero exit (bad input 2,
#     a port in use 1: README, "Exit status");
#   - /status says done, 2 / 2, the evaluator's newest rating; /api/history,
#     the evaluator's charts; a POST is refused (405) and the run directory
#     is as it was after everything served (read-only);
#   - the rendered page (--dump-dom): the run, the phase, the last V loss,
#     the self-play positions/s of metrics.jsonl (the terminal's figure),
#     the evaluator's state, Connect Four's help text (no other game's);
#     x ticks at whole iterations only (0 1 2, not 0.2 0.4), the Elo
#     chart's baselines (the anchors of the evaluator's opponents, as its
#     elo.svg draws them), the legend saying which colour is you, the
#     column numbers over the board;
#   - the charts fill their panel, at 1280 and at 900 pixels
#     (tests/dash_cdp.py);
#   - an Othello run's board has its coordinates a-h and 1-8, and the
#     legend says you are black; while it goes on, its phase line says
#     how far the learner's search is (its progress line);
#   - a click on the board is answered by the model (tests/web_cdp.py);
#   - the charts elo.svg and elo-time.svg as the browser draws them: every
#     legend text whole and inside the picture, distinct titles
#     (tests/svg_cdp.py);
#   - a record appended to metrics.jsonl shows up (files are re-read);
#   - --checkpoint 1 plays version 1;
#   - SIGTERM stops it with exit 143 (128 + 15, README "Exit status")
#     and no sanitizer report.
# Without chromium the test fails, unless PB_SKIP_BROWSER=1 says to skip it.
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@" # BIN SRC P T; T and what the test starts go at the end
SERVE=""
cleanup() {
  [ -n "$SERVE" ] && kill -9 "$SERVE" 2>/dev/null
  rm -rf "$T"
}
on_exit cleanup

need_browser test_serve

# req [METHOD] PATH: the body, or "HTTP <code>: <body>" for an error status;
# a first line "content-type: ..." with HEADERS=1.
req() {
  local method=GET
  [ $# -eq 2 ] && { method=$1; shift; }
  python3 - "$PORT" "$1" "$method" "${HEADERS:-0}" <<'EOF'
import sys, urllib.request, urllib.error
port, path, method, headers = sys.argv[1:5]
r = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                           data=b"" if method == "POST" else None)
try:
    with urllib.request.urlopen(r, timeout=30) as resp:
        if headers == "1":
            print("content-type:", resp.headers.get("Content-Type"))
        sys.stdout.write(resp.read().decode())
except urllib.error.HTTPError as e:
    sys.stdout.write(f"HTTP {e.code}: {e.read().decode()}")
except OSError as e:
    sys.stdout.write(f"ERROR {e}")
EOF
}
chrome() { "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run "$@" 2>>"$T/chromium.err"; }
# start_serve OUT ARGS...: probs serve in the background; sets SERVE and
# PORT (from its first line) or fails.
start_serve() {
  local out=$1
  shift
  "$BIN/probs" serve "$@" >"$out" 2>&1 &
  SERVE=$!
  PORT=""
  for _ in $(seq 1 300); do
    PORT=$(sed -n 's|.*on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$out")
    [ -n "$PORT" ] && return 0
    kill -0 "$SERVE" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}
stop_serve() {
  kill -TERM "$SERVE"
  wait "$SERVE"
  local rc=$?
  SERVE=""
  SERVE_RC=$rc
  [ "$rc" -eq 143 ] # stopped by SIGTERM: 128 + 15
}

RUN="$T/run"
if "$BIN/probs" train "$SRC/configs/connect4-smoke.yaml" --inproc --run-dir "$RUN" \
     --set train.iterations=2 >"$T/train.out" 2>&1 &&
   [ "$(grep -c '"event":"iteration"' "$RUN/metrics.jsonl")" -eq 2 ]; then
  ok "probs train --inproc: 2 iterations"
else bad "the run: $(tail -c 400 "$T/train.out")"; fi
if "$BIN/probs-evaluator" --run-dir "$RUN" --all --no-png >"$T/eval.out" 2>&1 &&
   [ "$(wc -l <"$RUN/elo.csv")" -eq 4 ] && [ -s "$RUN/elo-time.svg" ]; then
  ok "the evaluator rated versions 0..2 and drew its charts"
else bad "evaluator: $(tail -c 400 "$T/eval.out")"; fi

# ---- bad input
mkdir -p "$T/notarun"
expect "no RUN_DIR: usage, exit 2" 2 'need RUN_DIR' "$BIN/probs" serve
expect "a directory that does not exist: bad input, exit 2" 2 "$T/nope: no such directory" \
  "$BIN/probs" serve "$T/nope" --port 0
expect "a directory that is not a run directory: bad input, exit 2" 2 \
  "notarun is not a run directory: it has no config.yaml" \
  "$BIN/probs" serve "$T/notarun" --port 0
expect "a bad port: exit 2" 2 "--port 'x': expected -1..65535" \
  "$BIN/probs" serve "$RUN" --port x
expect "a checkpoint that does not exist: bad input, exit 2" 2 \
  'no checkpoint of version 9: .*ckpt-000009.pbck does not exist' \
  "$BIN/probs" serve "$RUN" --port 0 --checkpoint 9
expect "an unknown option: exit 2" 2 "unknown option '--train'" \
  "$BIN/probs" serve "$RUN" --train

# ---- the served run
(cd "$RUN" && find . -type f -printf '%p %s %T@\n' | sort) >"$T/before.txt"
if start_serve "$T/serve.out" "$RUN" --port 0; then
  ok "probs serve listens: $(head -1 "$T/serve.out")"
else bad "probs serve did not start: $(cat "$T/serve.out")"; fi
expect "a port in use: exit 1, naming it" 1 "port $PORT: Address already in use" \
  "$BIN/probs" serve "$RUN" --port "$PORT"

ST=$(req /status)
if grep -q '"serve":true,"run":"c4-smoke"' <<<"$ST" &&
   grep -q '"version":2,"iteration":2,"iterations":2,"phase":"done"' <<<"$ST" &&
   grep -q '"evaluator":{"running":false,"rated":3,"rated_version":2}' <<<"$ST" &&
   grep -q '"eta_s":0' <<<"$ST"; then
  ok "/status: done, 2 / 2, the evaluator's newest rating"
else bad "/status: $(head -c 600 <<<"$ST")"; fi
H=$(req /api/history)
if python3 -c '
import json, sys
h = json.loads(sys.argv[1])
o = h["last_elo"]["opponents"]
assert h["summary"]["count"] == 2 and len(h["elo"]) == 3, "counts"
assert h["last_elo"]["version"] == 2 and o["random"]["anchor"] == 1000, o
assert isinstance(o["lookahead:1"]["anchor"], (int, float)), o' "$H"; then
  ok "/api/history: 2 iteration records, 3 Elo rows, the anchors of the newest"
else bad "/api/history: $(head -c 400 <<<"$H")"; fi
SVG=$(HEADERS=1 req /elo-time.svg)
if grep -q '^content-type: image/svg+xml' <<<"$SVG" && grep -q 'by wall time</title>' <<<"$SVG"; then
  ok "/elo-time.svg: the evaluator's chart"
else bad "/elo-time.svg: $(head -c 300 <<<"$SVG")"; fi
expect "POST is refused: read-only (405)" 0 '^HTTP 405' req POST "/api/move?moves=4"
expect "/metrics is the learner's, not served (404)" 0 '^HTTP 404' req /metrics

# The page as the browser renders it, after a few polls.
chrome --virtual-time-budget=10000 --dump-dom "http://127.0.0.1:$PORT/" >"$T/dom.html"
read -r VLOSS PPS <<<"$(python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if "\"event\":\"iteration\"" in l]
print("%.4f %.0f" % (recs[-1]["v_loss"], recs[-1]["selfplay_positions_per_s"]))' "$RUN/metrics.jsonl")"
dom_has() { grep -qF -- "$1" "$T/dom.html"; }
if dom_has 'id="run">run c4-smoke<' && dom_has 'id="iter">2 / 2<' &&
   dom_has 'id="phase">done<' && dom_has 'id="eta">finished<' &&
   dom_has "id=\"vloss\">$VLOSS<" && dom_has '(version 2)</td>' &&
   dom_has 'read-only view (probs serve)'; then
  ok "the page shows the run, done, 2 / 2, V loss $VLOSS, Elo of version 2, read-only"
else
  bad "rendered page lacks the run's numbers (V loss $VLOSS): $(grep -o 'id="\(run\|iter\|vloss\|phase\|elo\|eta\)"[^<]*<' "$T/dom.html" | tr '\n' ' ')"
fi
# The terminal's line of that iteration (probs train --inproc) says the
# same number of positions/s.
if dom_has "id=\"pps\">$PPS<" && grep -q "iteration 2: .*($PPS pos/s" "$T/train.out"; then
  ok "self-play positions/s $PPS, the terminal's figure"
else
  bad "positions/s: page $(grep -o 'id="pps"[^<]*<' "$T/dom.html"), metrics $PPS, terminal: $(grep -o 'iteration 2: .*pos/s' "$T/train.out")"
fi
if dom_has 'id="evaluator">not running; newest rated: version 2<' &&
   ! grep -q 'evaluators 0' "$T/dom.html"; then
  ok "the evaluator's state from the run directory, no 'evaluators 0'"
else bad "evaluator: $(grep -o 'id="\(evaluator\|workers\)"[^<]*<' "$T/dom.html" | tr '\n' ' ')"; fi
if grep -q 'id="play-help">Click a column' "$T/dom.html" &&
   ! grep -o 'id="play-help">[^<]*<' "$T/dom.html" | grep -qi toguz; then
  ok "Connect Four's help text, not Toguz Kumalak's"
else bad "help: $(grep -o 'id="play-help"[^<]*<' "$T/dom.html")"; fi
if [ "$(grep -o '<polyline' "$T/dom.html" | wc -l)" -ge 4 ] && dom_has 'class="cell"'; then
  ok "the charts are drawn (SVG polylines) and the board is there"
else bad "no charts or no board in the rendered page"; fi

# The x axis is iterations: ticks at whole numbers only (3 Elo rows of
# versions 0..2 once gave 0, 0.2, .. 2).
TICKS=$(grep -o 'class="xtick"[^>]*>[^<]*<' "$T/dom.html" | sed 's/.*>\(.*\)</\1/' | tr '\n' ' ')
if [ "$(wc -w <<<"$TICKS")" -ge 6 ] && ! grep -qvE '^[0-9]+$' <<<"$(tr ' ' '\n' <<<"$TICKS" | sed '/^$/d')"; then
  ok "x ticks at whole iterations: $TICKS"
else bad "x ticks: '$TICKS'"; fi
# The baselines of elo.svg: connect4-smoke's opponents random and
# lookahead:1, both anchored.
RA=$(grep -o '>random ([0-9]*)<' "$RUN/elo.svg" | head -1)
if [ "$(grep -o '<line class="anchor"' "$T/dom.html" | wc -l)" -eq 2 ] &&
   [ -n "$RA" ] && dom_has "class=\"anchor-label\"" && dom_has "$RA" &&
   dom_has 'lookahead:1 (' && dom_has 'baselines (fixed Elo'; then
  ok "the Elo chart draws the evaluator's 2 baselines, as elo.svg ($RA)"
else bad "baselines: elo.svg has '$RA'; page: $(grep -o 'class="anchor[^>]*>[^<]*<' "$T/dom.html" | tr '\n' ' ')"; fi
if dom_has '>You: X (red)<' && dom_has '>the model: O (yellow)<' &&
   [ "$(grep -o 'class="coord">[1-7]<' "$T/dom.html" | wc -l)" -eq 7 ]; then
  ok "the legend says which colour is you; the columns are numbered"
else bad "legend or column numbers: $(grep -o 'id="you-legend".\{0,300\}' "$T/dom.html")"; fi

# The charts as the browser lays them out: they fill their panel.
if timeout 120 python3 "$SRC/tests/dash_cdp.py" "$CHROMIUM" \
     "http://127.0.0.1:$PORT/" "$T/profile-dash" >"$T/dash.out" 2>&1; then
  ok "the charts fill their panel at 1280 and 900 pixels: $(grep -o 'chart-elo: panel [0-9]*px, svg [0-9]*px' "$T/dash.out" | head -1)"
else bad "chart layout: $(cat "$T/dash.out")"; fi

# A real click on the board, through the DevTools protocol.
if timeout 120 python3 "$SRC/tests/web_cdp.py" "$CHROMIUM" \
     "http://127.0.0.1:$PORT/play" "$T/profile" >"$T/cdp.out" 2>&1; then
  ok "a click in column 4 is answered by the model ($(grep '^moves' "$T/cdp.out"))"
else bad "click: $(cat "$T/cdp.out")"; fi
# The evaluator's charts as the browser draws them.
if timeout 120 python3 "$SRC/tests/svg_cdp.py" "$CHROMIUM" "$T/profile-svg" \
     "http://127.0.0.1:$PORT/elo.svg" "http://127.0.0.1:$PORT/elo-time.svg" \
     >"$T/svg.out" 2>&1; then
  ok "elo.svg and elo-time.svg: legends whole and inside, titles distinct"
else bad "charts: $(cat "$T/svg.out")"; fi

(cd "$RUN" && find . -type f -printf '%p %s %T@\n' | sort) >"$T/after.txt"
if cmp -s "$T/before.txt" "$T/after.txt"; then
  ok "the run directory is as it was (read-only)"
else bad "the run directory changed: $(diff "$T/before.txt" "$T/after.txt" | head -5)"; fi

# Files are re-read as they change: a third record appears.
python3 - "$RUN/metrics.jsonl" <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if '"event":"iteration"' in l]
r = dict(recs[-1], version=3, iteration=3)
open(sys.argv[1], "a").write(json.dumps(r, separators=(",", ":")) + "\n")
EOF
ST=$(req /status)
if grep -q '"version":3,' <<<"$ST" && grep -q '"count":3' <<<"$(req /api/history)"; then
  ok "a record appended to metrics.jsonl is served"
else bad "after appending: $(head -c 300 <<<"$ST")"; fi

if stop_serve && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$T/serve.out"; then
  ok "probs serve stops cleanly on SIGTERM"
else bad "serve: $(tail -c 600 "$T/serve.out")"; fi

# The board pinned to version 1.
if start_serve "$T/serve1.out" "$RUN" --port 0 --checkpoint 1; then
  M=$(req "/api/move?moves=4")
  if grep -q '"version":1,' <<<"$M" && grep -q '"play":{"version":1,"pinned":true}' <<<"$(req /status)"; then
    ok "--checkpoint 1: version 1 plays"
  else bad "--checkpoint 1: $M"; fi
  stop_serve || bad "serve --checkpoint 1: exit $SERVE_RC: $(tail -c 400 "$T/serve1.out")"
else bad "probs serve --checkpoint 1 did not start: $(cat "$T/serve1.out")"; fi

# An Othello run (its config.yaml alone: no checkpoint, so the board is
# the start position): the board's coordinates and its colours. Its
# metrics.jsonl says iteration 2 of 2 goes on (a record of version 1 just
# written) and where the learner's search stands: the phase line says so.
OTH="$T/othello"
mkdir -p "$OTH" && cp "$SRC/configs/othello-smoke.yaml" "$OTH/config.yaml"
python3 - "$OTH/metrics.jsonl" <<'EOF'
import json, sys, time
with open(sys.argv[1], "w") as f:
    for r in ({"unix_time": time.time() - 5, "event": "iteration",
               "version": 1, "iteration_s": 30},
              {"event": "progress", "iteration": 2, "phase": "search",
               "done": 54, "total": 66}):
        f.write(json.dumps(r, separators=(",", ":")) + "\n")
EOF
if start_serve "$T/serve-oth.out" "$OTH" --port 0; then
  chrome --virtual-time-budget=5000 --dump-dom "http://127.0.0.1:$PORT/" >"$T/dom-oth.html"
  COORDS=$(grep -o 'class="coord">[^<]*<' "$T/dom-oth.html" | sed 's/.*>\(.*\)</\1/' | tr -d '\n')
  if [ "$COORDS" = "abcdefgh12345678" ] && grep -qF '>You: X (black)<' "$T/dom-oth.html" &&
     [ "$(grep -o 'class="cell[^"]*"' "$T/dom-oth.html" | wc -l)" -eq 64 ]; then
    ok "Othello's board: coordinates a-h over the columns, 1-8 beside the rows; you are black"
  else bad "Othello board: coordinates '$COORDS': $(grep -o 'id="you-legend".\{0,200\}' "$T/dom-oth.html")"; fi
  if grep -qF 'id="phase">running: search 54/66 items (82%)<' "$T/dom-oth.html"; then
    ok "a run that goes on: the phase with the learner's progress (search 54/66 items (82%))"
  else bad "phase: $(grep -o 'id="phase"[^<]*<' "$T/dom-oth.html")"; fi
  stop_serve || bad "serve (Othello): exit $SERVE_RC: $(tail -c 400 "$T/serve-oth.out")"
else bad "probs serve of an Othello run did not start: $(cat "$T/serve-oth.out")"; fi

finish test_serve
