#!/usr/bin/env python3
"""svg_cdp.py CHROMIUM PROFILE_DIR URL... - the evaluator's SVG charts as a
browser draws them (tests/test_serve.sh): opens each URL (elo.svg,
elo-time.svg as probs serve serves them) in headless CHROMIUM through the
DevTools protocol and measures, with the fonts the browser really uses,
every text of the legend (getBBox): each must lie inside the viewBox, and
the legend must name its series whole (no "accuracy: beam sear..."; the
search's series is "accuracy: abnet nodes=N" or "... beam search E=.. M=.."). The
charts' titles must differ from each other. Prints what it measured; exit
status 0 when all holds.

Python standard library only; the WebSocket client is web_cdp.py's."""
import json
import os
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from web_cdp import Page, WebSocket, wait_for  # noqa: E402

MEASURE = """(function () {
  var svg = document.documentElement, vb = svg.viewBox.baseVal;
  var title = document.querySelector("text.title"), legend = [];
  document.querySelectorAll("g.legend text").forEach(function (t) {
    var b = t.getBBox();
    legend.push({text: t.textContent, x: b.x, y: b.y, w: b.width, h: b.height});
  });
  var tb = title ? title.getBBox() : null;
  return JSON.stringify({vw: vb.width, vh: vb.height, legend: legend,
    title: title ? title.textContent : null,
    tx: tb ? tb.x : null, tw: tb ? tb.width : null});
})()"""


def main():
    chromium, profile, urls = sys.argv[1], sys.argv[2], sys.argv[3:]
    proc = subprocess.Popen(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu",
         "--no-first-run", "--remote-debugging-port=0",
         f"--user-data-dir={profile}", "--window-size=1280,1000", urls[0]],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ok, titles = True, []
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        wait_for("DevToolsActivePort", lambda: os.path.exists(port_file)
                 and len(open(port_file).read().split()) >= 1)
        port = int(open(port_file).read().split()[0])

        def page_target():
            with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                for t in json.load(r):
                    if t.get("type") == "page":
                        return t.get("webSocketDebuggerUrl")
            return None
        page = Page(WebSocket(wait_for("the page target", page_target)))
        for url in urls:
            page.call("Page.navigate", url=url)
            wait_for(f"{url} loaded", lambda: page.eval(
                "document.readyState === 'complete' && "
                f"location.href === {json.dumps(url)} && "
                "document.querySelector('g.legend') !== null"))
            m = json.loads(page.eval(MEASURE))
            print(f"{url}: viewBox {m['vw']:.0f}x{m['vh']:.0f}, "
                  f"title {m['title']!r}")
            titles.append(m["title"])
            if m["tx"] is None or m["tx"] < 0 or m["tx"] + m["tw"] > m["vw"]:
                print(f"  title NOT inside: x {m['tx']}, width {m['tw']}")
                ok = False
            names = []
            for t in m["legend"]:
                inside = (t["x"] >= 0 and t["x"] + t["w"] <= m["vw"] + 0.01
                          and t["y"] >= 0 and t["y"] + t["h"] <= m["vh"])
                print(f"  {'ok ' if inside else 'OUT'} x {t['x']:.1f}.."
                      f"{t['x'] + t['w']:.1f} y {t['y']:.1f}: {t['text']!r}")
                ok &= inside
                names.append(t["text"])
            # The search's series, named whole: "accuracy: abnet nodes=60"
            # (the default) or "accuracy: beam search E=10 M=3".
            search = [n for n in names
                      if n.startswith(("accuracy: abnet", "accuracy: beam search"))]
            if not search or not any(("nodes=" in n or "M=" in n) for n in search):
                print("  legend lacks the whole search accuracy name")
                ok = False
        if len(set(titles)) != len(titles) or None in titles:
            print(f"titles NOT distinct: {titles}")
            ok = False
        print("charts ok" if ok else "charts NOT as expected")
        return 0 if ok else 1
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    sys.exit(main())
