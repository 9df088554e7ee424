"""Headless Chromium driven over the DevTools protocol (tornado's websocket client): one page, its console, its
screenshot. Chromium is Debian's package (scripts/ensure_chromium.sh)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from . import CHROMIUM_FLAGS, chromium  # noqa: F401 - chromium: the tests find the browser through here too

# ------------------------------------------------------------------ a tiny DevTools client


class Browser:
    """Headless Chromium driven over the DevTools protocol (one page)."""

    def __init__(self, exe: str, width: int = 1280, height: int = 900):
        from tornado.ioloop import IOLoop

        self.profile = tempfile.mkdtemp(prefix="cgb-chromium-")
        self.proc = subprocess.Popen([exe, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}",
                                      "--remote-debugging-port=0", f"--window-size={width},{height}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.time() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            if time.time() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("Chromium did not start")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        pages = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        ws_url = next(p["webSocketDebuggerUrl"] for p in pages if p.get("type") == "page")
        self.loop = IOLoop()
        self.events: list[dict] = []
        self._id = 0
        self.ws = self.loop.run_sync(lambda: self._connect(ws_url), timeout=30)

    async def _connect(self, url):
        from tornado.websocket import websocket_connect

        return await websocket_connect(url, max_message_size=256 * 2**20)

    async def _call(self, method, params):
        self._id += 1
        my = self._id
        await self.ws.write_message(json.dumps({"id": my, "method": method, "params": params or {}}))
        while True:
            msg = await self.ws.read_message()
            if msg is None:
                raise RuntimeError("DevTools connection closed")
            data = json.loads(msg)
            if data.get("id") == my:
                if "error" in data:
                    raise RuntimeError(f"{method}: {data['error']}")
                return data.get("result", {})
            if "method" in data:
                self.events.append(data)

    async def _wait_event(self, name, timeout):
        import asyncio

        end = time.time() + timeout
        while not any(e["method"] == name for e in self.events):
            msg = await asyncio.wait_for(self.ws.read_message(), max(0.1, end - time.time()))
            if msg is None:
                raise RuntimeError("DevTools connection closed")
            data = json.loads(msg)
            if "method" in data:
                self.events.append(data)

    def call(self, method, params=None, timeout=60):
        return self.loop.run_sync(lambda: self._call(method, params), timeout=timeout)

    def open(self, url: str, timeout=60):
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.events.clear()
        self.call("Page.navigate", {"url": url})
        self.loop.run_sync(lambda: self._wait_event("Page.loadEventFired", timeout), timeout=timeout + 5)
        self.eval("new Promise(r => setTimeout(r, 300))")  # late console messages

    def eval(self, expr: str):
        res = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
        return res.get("result", {}).get("value")

    def console_errors(self) -> list[str]:
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif e["method"] == "Runtime.exceptionThrown":
                out.append(str(p.get("exceptionDetails", {}).get("exception", {}).get("description")))
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"{p['entry'].get('source')}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        return out

    def screenshot(self, path: Path, full_page: bool = True, max_height: int = 16000):
        params = {"format": "png"}
        if full_page:
            h = min(int(self.eval("document.documentElement.scrollHeight") or 900), max_height)
            w = int(self.eval("document.documentElement.scrollWidth") or 1280)
            params.update(captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": w, "height": h, "scale": 1})
        data = self.call("Page.captureScreenshot", params, timeout=120)["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return path

    def close(self):
        try:
            if getattr(self, "ws", None) is not None:
                self.ws.close()
            if getattr(self, "loop", None) is not None:
                self.loop.close(all_fds=True)
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            shutil.rmtree(self.profile, ignore_errors=True)
