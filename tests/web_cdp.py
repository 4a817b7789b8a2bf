#!/usr/bin/env python3
"""web_cdp.py CHROMIUM URL PROFILE_DIR - clicks a Connect Four column in the
learner's page through the Chrome DevTools Protocol and checks that the
model answers (tests/test_web_browser.sh).

Starts CHROMIUM headless with a DevTools port, opens URL (the learner's
/play), waits for "Your move", clicks the top cell of column 4 with real
mouse events (Input.dispatchMouseEvent), then waits until the page shows
the model's reply: two discs on the board, a two-move list, "played" in the
status line; then clicks the charts' x-axis toggle and waits for the
"wall time" axis. Prints what it saw; exit status 0 when both worked.

Python standard library only: the WebSocket handshake and framing
(RFC 6455, client side: masked text frames) are written out here."""
import base64
import json
import os
import socket
import struct
import subprocess
import sys
import time
import urllib.request


class WebSocket:
    def __init__(self, url, timeout=30):
        assert url.startswith("ws://")
        hostport, _, path = url[5:].partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        req = (f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise IOError("websocket: connection closed in the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise IOError("websocket: handshake refused: %r" % head[:200])

    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise IOError("websocket: connection closed")
            buf += chunk
        return buf

    def send(self, text, opcode=1):
        data = text.encode() if isinstance(text, str) else text
        head = bytes([0x80 | opcode])
        n = len(data)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(head + mask + body)

    def recv(self):
        """The next whole text message (pings answered, fragments joined)."""
        parts = []
        while True:
            b0, b1 = self._recv_exact(2)
            opcode, fin = b0 & 0x0F, b0 & 0x80
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            mask = self._recv_exact(4) if b1 & 0x80 else None
            data = self._recv_exact(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            if opcode == 8:
                raise IOError("websocket: closed by the browser")
            if opcode == 9:
                self.send(data, opcode=10)
                continue
            if opcode in (0, 1, 2):
                parts.append(data)
                if fin:
                    return b"".join(parts).decode()


class Page:
    def __init__(self, ws):
        self.ws, self.next_id = ws, 0

    def call(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise IOError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        return r.get("result", {}).get("value")


def wait_for(what, fn, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    raise TimeoutError(f"timed out waiting for {what}")


def click(page, elem_id):
    """A left click with real mouse events at the middle of the element."""
    page.eval(f"document.getElementById('{elem_id}').scrollIntoView("
              "{block: 'center'})")
    rect = json.loads(page.eval(f"JSON.stringify(document.getElementById("
                                f"'{elem_id}').getBoundingClientRect())"))
    x = rect["x"] + rect["width"] / 2
    y = rect["y"] + rect["height"] / 2
    print(f"clicking #{elem_id} at ({x:.0f}, {y:.0f})")
    page.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
    page.call("Input.dispatchMouseEvent", type="mousePressed", x=x, y=y,
              button="left", clickCount=1)
    page.call("Input.dispatchMouseEvent", type="mouseReleased", x=x, y=y,
              button="left", clickCount=1)


def open_page(chromium, url, profile):
    """Starts a headless chromium on url with its profile in `profile`
    and returns (process, Page) once the page's target answers; the
    caller stops the process with close_browser."""
    proc = subprocess.Popen(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu",
         "--no-first-run", "--remote-debugging-port=0",
         f"--user-data-dir={profile}", "--window-size=1280,1000", url],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        wait_for("DevToolsActivePort", lambda: os.path.exists(port_file)
                 and len(open(port_file).read().split()) >= 1)
        port = int(open(port_file).read().split()[0])

        def page_target():
            with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                for t in json.load(r):
                    if t.get("type") == "page" and t.get("url", "").startswith(url):
                        return t.get("webSocketDebuggerUrl")
            return None
        return proc, Page(WebSocket(wait_for("the page target", page_target)))
    except BaseException:
        close_browser(proc)
        raise


def close_browser(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main():
    chromium, url, profile = sys.argv[1:4]
    proc, page = open_page(chromium, url, profile)
    try:
        status = lambda: page.eval(
            "document.getElementById('play-status').textContent") or ""
        wait_for("'Your move' on the page", lambda: "Your move" in status())
        click(page, "cell-0-3")
        wait_for("the model's reply",
                 lambda: status().startswith("Model (version"))
        seen = json.loads(page.eval(
            "JSON.stringify({status: document.getElementById('play-status')"
            ".textContent, moves: document.getElementById('moves').textContent,"
            " discs: document.querySelectorAll('#board .cell.X').length + ','"
            " + document.querySelectorAll('#board .cell.O').length,"
            " bottom: document.getElementById('cell-5-3').className})"))
        moves, discs, bottom = seen["moves"], seen["discs"], seen["bottom"]
        print(f"status: {seen['status']}")
        print(f"moves: {moves}")
        print(f"discs X,O: {discs}")
        print(f"bottom of column 4: {bottom}")
        ok = (len(moves) == 2 and moves[0] == "4" and moves[1] in "1234567"
              and discs == "1,1" and "X" in bottom.split())
        print("reply ok" if ok else "reply NOT as expected")
        # The charts' x axis toggle: iteration -> wall time.
        click(page, "xaxis")
        label = lambda: page.eval(
            "document.getElementById('chart-loss').textContent") or ""
        try:
            wait_for("the wall-time axis", lambda: "wall time" in label(), 10)
            print("x axis toggled to wall time")
        except TimeoutError:
            print("x axis toggle NOT seen")
            ok = False
        # A chart of one point: its y axis around the value (an Elo of
        # 1500 from 1425 to 1575 or so), not 1499..1501.
        ticks = json.loads(page.eval(
            "(function () {"
            " var ns = 'http://www.w3.org/2000/svg';"
            " var svg = document.createElementNS(ns, 'svg');"
            " document.body.appendChild(svg);"
            " var leg = document.createElement('div');"
            " lineChart(svg, leg, [{name: 'Elo', color: '#000',"
            "  pts: [[1, 1500]]}], 'iteration', {intX: true, minPad: 50});"
            " var t = [].map.call(svg.querySelectorAll('text'),"
            "  function (e) { return e.textContent; });"
            " svg.remove(); return JSON.stringify(t); })()"))
        ys = [float(t) for t in ticks if t.replace(".", "").isdigit()
              and float(t) > 100]
        print(f"one point at 1500: y ticks {ys}")
        if not ys or max(ys) - min(ys) < 50 or not min(ys) <= 1500 <= max(ys):
            print("one-point axis NOT padded around the value")
            ok = False
        else:
            print("one-point axis padded around the value")
        return 0 if ok else 1
    finally:
        close_browser(proc)


if __name__ == "__main__":
    sys.exit(main())
