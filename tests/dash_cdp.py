#!/usr/bin/env python3
"""dash_cdp.py CHROMIUM URL PROFILE_DIR - the dashboard's charts as the
browser lays them out, through the Chrome DevTools Protocol
(tests/test_serve.sh): the page of a run that has Elo rows.

Opens URL in a 1280x1000 window, waits until the three charts are drawn,
then checks, for each chart (#chart-loss, #chart-elo, #chart-acc):
  - it fills its panel: the SVG is at least 97% of the width inside the
    section, and its plot frame (rect.frame) at least 85% of it (it was
    about 60% when the page drew a fixed 600-unit picture in a wider box);
  - drawn one unit a pixel: its viewBox is as wide as the SVG is;
  - its x ticks (text.xtick) are whole iterations, at least two of them;
then narrows the window to 900 pixels and checks that the charts are
drawn again at the new width, still filling the panel. Prints what it
measured; exit status 0 when every check held.

Python standard library only; the WebSocket client is web_cdp.py's."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from web_cdp import close_browser, open_page, wait_for  # noqa: E402

CHARTS = ("chart-loss", "chart-elo", "chart-acc")

MEASURE = """JSON.stringify(%s.map(function (id) {
  var svg = document.getElementById(id), sec = svg.closest("section");
  var cs = getComputedStyle(sec);
  var inner = sec.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  var fr = svg.querySelector("rect.frame");
  var vb = (svg.getAttribute("viewBox") || "").split(/\\s+/).map(Number);
  return { id: id, inner: inner, svg: svg.getBoundingClientRect().width,
           frame: fr ? fr.getBoundingClientRect().width : 0,
           viewbox: vb.length === 4 ? vb[2] : 0,
           ticks: Array.prototype.map.call(svg.querySelectorAll("text.xtick"),
                                           function (t) { return t.textContent; }) };
}))""" % json.dumps(list(CHARTS))


def check(page, label):
    ok = True
    for m in json.loads(page.eval(MEASURE)):
        fill_svg = m["svg"] / m["inner"] if m["inner"] else 0
        fill_frame = m["frame"] / m["inner"] if m["inner"] else 0
        whole = all(t.isdigit() for t in m["ticks"]) and len(m["ticks"]) >= 2
        good = (fill_svg >= 0.97 and fill_frame >= 0.85 and whole and
                abs(m["viewbox"] - m["svg"]) <= 2)
        print(f"{label} {m['id']}: panel {m['inner']:.0f}px, svg "
              f"{m['svg']:.0f}px ({fill_svg:.0%}), frame {m['frame']:.0f}px "
              f"({fill_frame:.0%}), viewBox width {m['viewbox']:.0f}, x ticks "
              f"{' '.join(m['ticks'])}{'' if good else '  <- NOT as expected'}")
        ok = ok and good
    return ok


def main():
    chromium, url, profile = sys.argv[1:4]
    proc, page = open_page(chromium, url, profile)
    try:
        drawn = "document.querySelectorAll('#%s circle').length > 0"
        wait_for("the charts drawn", lambda: all(
            page.eval(drawn % c) for c in CHARTS))
        ok = check(page, "1280px:")
        # A narrower window: the charts are drawn again at their new width.
        page.call("Emulation.setDeviceMetricsOverride", width=900,
                  height=1000, deviceScaleFactor=1, mobile=False)
        time.sleep(1.0)
        try:
            wait_for("the charts redrawn at 900px", lambda: abs(json.loads(
                page.eval(MEASURE))[1]["viewbox"] - json.loads(
                page.eval(MEASURE))[1]["svg"]) <= 2, 10)
        except TimeoutError:
            print("the charts were NOT redrawn at the new width")
            ok = False
        ok = check(page, "900px:") and ok
        return 0 if ok else 1
    finally:
        close_browser(proc)


if __name__ == "__main__":
    sys.exit(main())
