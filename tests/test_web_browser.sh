#!/usr/bin/env bash
# test_web_browser.sh BIN_DIR SOURCE_DIR - the learner's web page in a real
# headless browser (Debian's chromium): a Connect Four run of 2 iterations
# (probs train --inproc) rated by the evaluator, then a learner resumed on
# it with train.iterations=1000 and no workers, so it waits in self-play of
# iteration 3 and only serves HTTP. Checks that
#   - the rendered page (--dump-dom) shows the run's name, the iteration,
#     the phase and how far its work queue is (/status "queue": "selfplay
#     0/N items (0%)", no worker takes any),
#     the last V loss of metrics.jsonl, the newest Elo row, drawn charts,
#     the evaluator's state (from the run directory), the self-play
#     positions/s of metrics.jsonl and Connect Four's help text;
#   - a screenshot is a real PNG of the window's size;
#   - a move clicked in the page is answered by the model: tests/web_cdp.py
#     clicks a column with real mouse events through the DevTools protocol
#     and reads the board back, then clicks the charts' x-axis toggle and
#     sees the wall-time axis;
#   - the learner stops cleanly on SIGTERM (no sanitizer report).
# chromium is installed by scripts/setup.sh; without it the test fails,
# unless PB_SKIP_BROWSER=1 says to skip it.
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@" # BIN SRC P T; T and what the test starts go at the end
LEARNER=""
cleanup() {
  [ -n "$LEARNER" ] && kill -9 "$LEARNER" 2>/dev/null
  rm -rf "$T"
}
on_exit cleanup

need_browser test_web_browser

# get PATH: prints the body, or "HTTP <code>: <body>" for an error status.
get() {
  python3 - "$PORT" "$1" <<'EOF'
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}{sys.argv[2]}", timeout=10) as r:
        sys.stdout.write(r.read().decode())
except urllib.error.HTTPError as e:
    sys.stdout.write(f"HTTP {e.code}: {e.read().decode()}")
except OSError as e:
    sys.stdout.write(f"ERROR {e}")
EOF
}
chrome() { "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run "$@" 2>>"$T/chromium.err"; }

RUN="$T/run"
if "$BIN/probs" train "$SRC/configs/connect4-smoke.yaml" --inproc --run-dir "$RUN" \
     --set train.iterations=2 >"$T/train.out" 2>&1 &&
   [ "$(grep -c '"event":"iteration"' "$RUN/metrics.jsonl")" -eq 2 ]; then
  ok "probs train --inproc: 2 iterations"
else bad "the run: $(tail -c 400 "$T/train.out")"; fi
if "$BIN/probs-evaluator" --run-dir "$RUN" --all --no-png >"$T/eval.out" 2>&1 &&
   [ "$(wc -l <"$RUN/elo.csv")" -eq 4 ]; then
  ok "the evaluator rated versions 0..2"
else bad "evaluator: $(tail -c 400 "$T/eval.out")"; fi

# net.http_port=-1: a port the kernel gives, which the learner writes to
# RUN_DIR/endpoints once it is bound.
"$BIN/probs-learner" --resume "$RUN" --set train.iterations=1000 \
  --set "net.http_port=-1" --set "net.work_endpoint=ipc://$T/work" \
  --set "net.pub_endpoint=ipc://$T/pub" >"$T/learner.out" 2>&1 &
LEARNER=$!
PORT=""
for _ in $(seq 1 600); do
  PORT=$(sed -n 's/^net.http_port=//p' "$RUN/endpoints" 2>/dev/null)
  [ -n "$PORT" ] && break
  sleep 0.1
done
[ -n "$PORT" ] || bad "no RUN_DIR/endpoints from the learner: $(tail -c 300 "$T/learner.out")"
for _ in $(seq 1 300); do
  get /status | grep -q '"phase":"selfplay"' && break
  sleep 0.2
done
ST=$(get /status)
if grep -q '"iteration":3,"iterations":1000' <<<"$ST" && grep -q '"eta_s":' <<<"$ST" &&
   grep -qE '"last_iteration":\{"time":"[^"]+","unix_time":[0-9.]+,"event":"iteration"' <<<"$ST"; then
  ok "the learner serves /status with elapsed, ETA and the last iteration"
else bad "/status: $(head -c 400 <<<"$ST"); learner: $(tail -c 400 "$T/learner.out")"; fi
H=$(get /api/history)
if python3 -c '
import json, sys
h = json.loads(sys.argv[1])
assert h["summary"]["count"] == 2 and len(h["elo"]) == 3' "$H"; then
  ok "/api/history: 2 iteration records, 3 Elo rows"
else bad "/api/history: $(head -c 400 <<<"$H")"; fi
expect "/api/move refuses a full column (400)" 0 'HTTP 400: \{"error":' get "/api/move?moves=4444444"

# The page as the browser renders it, after a few polls.
chrome --virtual-time-budget=10000 --dump-dom "http://127.0.0.1:$PORT/" >"$T/dom.html"
VLOSS=$(python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if "\"event\":\"iteration\"" in l]
print("%.4f" % recs[-1]["v_loss"])' "$RUN/metrics.jsonl")
dom_has() { grep -qF -- "$1" "$T/dom.html"; }
# The phase with its progress: the self-play queue's items done of all.
QT=$(python3 -c 'import json, sys; q = json.loads(sys.argv[1])["queue"]; print(q["done"], q["total"])' "$ST")
read -r QDONE QTOTAL <<<"$QT"
PHASE="selfplay $QDONE/$QTOTAL items (0%)"
if dom_has 'id="run">run c4-smoke<' && dom_has 'id="iter">3 / 1000<' &&
   dom_has "id=\"vloss\">$VLOSS<" && [ "${QDONE:-x}" = 0 ] && [ "${QTOTAL:-0}" -gt 0 ] &&
   dom_has "id=\"phase\">$PHASE<" && dom_has '(version 2)</td>'; then
  ok "the page shows the run, iteration 3 / 1000, phase '$PHASE', V loss $VLOSS, Elo of version 2"
else
  bad "rendered page lacks the run's numbers (V loss $VLOSS): $(grep -o 'id="\(run\|iter\|vloss\|phase\|elo\)"[^<]*<' "$T/dom.html" | tr '\n' ' ')"
fi
# The evaluator talks to no socket of the learner: the page says what the
# run directory says (it ran with --all and has exited), not "evaluators 0";
# self-play positions/s is the terminal's figure (metrics.jsonl's
# selfplay_positions_per_s); the help text is Connect Four's.
PPS=$(python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if "\"event\":\"iteration\"" in l]
print("%.0f" % recs[-1]["selfplay_positions_per_s"])' "$RUN/metrics.jsonl")
if dom_has 'id="evaluator">not running; newest rated: version 2<' &&
   dom_has 'id="workers">actors 0, searchers 0<' && ! dom_has 'evaluators' &&
   dom_has "id=\"pps\">$PPS<" && dom_has 'id="play-help">Click a column'; then
  ok "evaluator from the run directory, positions/s $PPS as the terminal's, Connect Four's help"
else
  bad "evaluator, workers, positions/s ($PPS) or help: $(grep -o 'id="\(evaluator\|workers\|pps\|play-help\)"[^<]*<' "$T/dom.html" | tr '\n' ' ')"
fi
# The phase's bar (0 of the queue's items done), the elapsed time and an
# ETA, not "-".
if grep -q '<progress id="phasebar" max="1"[^>]*value="0"' "$T/dom.html" &&
   ! dom_has 'id="elapsed">-<' && ! dom_has 'id="eta">-<'; then
  ok "the phase's progress bar, elapsed and ETA"
else bad "phase bar, elapsed or ETA: $(grep -o '<progress[^>]*>\|id="\(elapsed\|eta\)">[^<]*<' "$T/dom.html" | tr '\n' ' ')"; fi
if [ "$(grep -o '<polyline' "$T/dom.html" | wc -l)" -ge 4 ] && dom_has 'class="cell"'; then
  ok "the charts are drawn (SVG polylines) and the board is there"
else bad "no charts or no board in the rendered page"; fi

chrome --virtual-time-budget=10000 --window-size=1280,1000 \
  --screenshot="$T/page.png" "http://127.0.0.1:$PORT/" >/dev/null
if python3 - "$T/page.png" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n" and b[12:16] == b"IHDR", "not a PNG"
w, h = struct.unpack(">II", b[16:24])
assert (w, h) == (1280, 1000), (w, h)
assert len(b) > 20000, len(b)  # a blank page compresses to a few KB
print(f"screenshot {w}x{h}, {len(b)} bytes")
EOF
then ok "screenshot"
else bad "screenshot: $(ls -l "$T/page.png" 2>&1)"; fi

# A real click on the board, through the DevTools protocol.
if timeout 120 python3 "$SRC/tests/web_cdp.py" "$CHROMIUM" \
     "http://127.0.0.1:$PORT/play" "$T/profile" >"$T/cdp.out" 2>&1; then
  ok "a click in column 4 is answered by the model ($(grep '^moves' "$T/cdp.out")); the x axis toggles to wall time; a one-point chart's axis is padded around its value"
else bad "click: $(cat "$T/cdp.out")"; fi

kill -TERM "$LEARNER"
wait "$LEARNER"
rc=$?
LEARNER=""
if [ "$rc" -eq 0 ] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$T/learner.out"; then
  ok "the learner stops cleanly on SIGTERM"
else bad "learner exit $rc: $(tail -c 600 "$T/learner.out")"; fi

finish test_web_browser
