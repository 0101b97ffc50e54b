"""Headless Debian Chromium driven over the Chrome DevTools protocol, for tests of HTML pages.

:func:`chromium_path` finds ``/usr/bin/chromium`` or installs Debian's package (``apt-get``, as
root); :class:`Browser` opens a page, records console errors, uncaught exceptions and every
network request, evaluates JavaScript and takes screenshots. The flags are those that work on a
machine without network (no background networking, component updates, sync or QUIC).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1280,900",
    "--hide-scrollbars",
)


def chromium_path() -> tuple[str | None, str]:
    """(path of Chromium, or None and why it is missing after trying to install it)."""
    found = shutil.which("chromium")
    if found:
        return found, ""
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return None, "chromium is not installed and Debian's package cannot be installed here (no apt-get or not root)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        ["apt-get", "install", "-y", "-qq", "chromium"],
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "chromium"],
    ):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
        if command[1] == "install" and done.returncode == 0 and shutil.which("chromium"):
            return shutil.which("chromium"), ""
    return None, f"apt-get install chromium failed: {done.stderr.strip()[-300:]}"


class Browser:
    """One headless Chromium with one page (use as a context manager)."""

    def __init__(self, executable: str) -> None:
        import websocket  # websocket-client (test dependency)

        # Chromium's helper processes may still write the profile while it is removed: ignore that
        self._profile = tempfile.TemporaryDirectory(prefix="kraft-replay-chromium-", ignore_cleanup_errors=True)
        self._process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: close() stops the helpers too
        )
        port = self._devtools_port()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            page = next(t for t in json.load(answer) if t["type"] == "page")
        self._socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30)
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def _devtools_port(self) -> int:
        assert self._process.stderr is not None
        deadline = time.monotonic() + 30
        lines = []
        while time.monotonic() < deadline:
            line = self._process.stderr.readline()
            if not line and self._process.poll() is not None:
                break
            lines.append(line)
            found = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if found:
                return int(found.group(1))
        self.close()
        raise RuntimeError("chromium did not start its DevTools endpoint: " + "".join(lines)[-1000:])

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command; events arriving meanwhile are kept in :attr:`events`."""
        self._next_id += 1
        self._socket.send(json.dumps({"id": self._next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv())
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, event: str, timeout: float = 60) -> None:
        """Wait until ``event`` (a CDP event name) has arrived."""
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == event for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {event} within {timeout} s")
            self._socket.settimeout(max(0.1, deadline - time.monotonic()))
            self.events.append(json.loads(self._socket.recv()))

    def open(self, path: Path) -> None:
        self.call("Page.navigate", url=path.resolve().as_uri())
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(params["exceptionDetails"])[:500])
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                out.append("log: " + params["entry"]["text"])
        return out

    def requests(self) -> list[str]:
        """URLs of every request the page made."""
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path, width: int = 1280, height: int | None = None) -> None:
        """A PNG of the top ``height`` pixels of the page (default: all of it)."""
        height = height or int(self.evaluate("document.documentElement.scrollHeight"))
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        data = self.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        )["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        if getattr(self, "_socket", None) is not None:
            self._socket.close()
        try:
            os.killpg(self._process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._process.wait(timeout=30)
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
