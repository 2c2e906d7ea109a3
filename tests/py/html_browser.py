"""Drive headless Chromium over the DevTools protocol to test the HTML report
as a user meets it: real mouse clicks and wheel turns (Input.dispatch*),
the page's state read back with Runtime.evaluate, screenshots saved as PNG.

The protocol goes over a pipe (`--remote-debugging-pipe`: commands on the
browser's fd 3, replies and events on its fd 4, each message JSON ending in
a NUL byte), so no port is opened and nothing beyond the standard library
is needed.  One Browser per test module; one page at a time.
"""
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _onto_3_and_4(read_end, write_end):
    """In the child: the pipe ends as fds 3 and 4 (moved above 9 first, as
    either may already be 3 or 4)."""
    r, w = fcntl.fcntl(read_end, fcntl.F_DUPFD, 10), fcntl.fcntl(write_end, fcntl.F_DUPFD, 10)
    os.dup2(r, 3)
    os.dup2(w, 4)


class BrowserError(RuntimeError):
    pass


class Browser:
    """A headless Chromium with one page.  Every call waits for its reply
    (at most `timeout` seconds: a hung page fails the test, it does not
    hang it)."""

    def __init__(self, profile_dir, width=1200, height=900, timeout=60):
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        # the browser reads fd 3 and writes fd 4
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--user-data-dir=%s" % profile_dir, "--window-size=%d,%d" % (width, height),
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            pass_fds=(3, 4), preexec_fn=lambda: _onto_3_and_4(to_browser_r, from_browser_w),
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.wfd, self.rfd = to_browser_w, from_browser_r
        self.timeout, self.next_id, self.buf, self.events = timeout, 0, b"", []
        self.session = None
        self.width, self.height = width, height
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.rfd], [], [], left)[0]:
                raise BrowserError("no reply from Chromium in %d s" % self.timeout)
            chunk = os.read(self.rfd, 1 << 20)
            if not chunk:
                raise BrowserError("Chromium closed the pipe: %s" % self.proc.stderr.read()[-2000:])
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session:
            msg["sessionId"] = self.session
        os.write(self.wfd, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise BrowserError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method):
        deadline = time.monotonic() + self.timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    def open(self, path):
        """Load a file and wait until the page's script says it is ready."""
        self.events = []
        self.call("Page.navigate", {"url": "file://%s" % path})
        self.wait_event("Page.loadEventFired")
        deadline = time.monotonic() + self.timeout
        while not self.js("document.body && document.body.getAttribute('data-ready') === 'yes'"):
            if time.monotonic() > deadline:
                raise BrowserError("the page never became ready; console: %s" % self.console())
            time.sleep(0.05)

    def console(self):
        return [e["params"] for e in self.events if e.get("method") in ("Runtime.exceptionThrown",
                                                                          "Runtime.consoleAPICalled")]

    def errors(self):
        """Exceptions the page's script threw."""
        return [e["params"]["exceptionDetails"] for e in self.events
                if e.get("method") == "Runtime.exceptionThrown"]

    def js(self, expression):
        """The value of a JavaScript expression in the page (JSON values)."""
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise BrowserError("%s: %s" % (expression, r["exceptionDetails"]))
        return r["result"].get("value")

    def center(self, selector):
        """Viewport coordinates of the middle of the element, scrolled into view."""
        self.js("document.querySelector(%s).scrollIntoView({block: 'center'})" % json.dumps(selector))
        return self.js("(function () { var r = document.querySelector(%s).getBoundingClientRect();"
                       " return [r.left + r.width / 2, r.top + r.height / 2]; })()" % json.dumps(selector))

    def rect(self, selector):
        return self.js("(function () { var r = document.querySelector(%s).getBoundingClientRect();"
                       " return [r.left, r.top, r.width, r.height]; })()" % json.dumps(selector))

    def click(self, x, y, modifiers=0):
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left",
                                                   "clickCount": 1, "modifiers": modifiers})

    def click_on(self, selector):
        x, y = self.center(selector)
        self.click(x, y)

    def move(self, x, y):
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def drag(self, x0, y0, x1, y1):
        self.call("Input.dispatchMouseEvent", {"type": "mousePressed", "x": x0, "y": y0, "button": "left",
                                               "clickCount": 1})
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x1, "y": y1, "button": "left"})
        self.call("Input.dispatchMouseEvent", {"type": "mouseReleased", "x": x1, "y": y1, "button": "left",
                                               "clickCount": 1})

    def wheel(self, x, y, dy, modifiers=0):
        """A wheel turn at (x, y); modifiers: 2 ctrl, 8 shift."""
        self.call("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": dy,
                                               "modifiers": modifiers})

    def type_text(self, selector, text):
        self.js("document.querySelector(%s).focus()" % json.dumps(selector))
        self.call("Input.insertText", {"text": text})

    def screenshot(self, path):
        """The whole page as a PNG at path."""
        height = self.js("document.documentElement.scrollHeight")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": min(height, 8000), "deviceScaleFactor": 1, "mobile": False})
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})
        with open(str(path), "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self):
        try:
            self.call("Browser.close")
        except BrowserError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.wfd)
        os.close(self.rfd)
