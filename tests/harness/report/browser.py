"""A very small Chrome DevTools Protocol client over ``--remote-debugging-pipe``: enough to open a
report in headless Chromium, read what the page shows once its scripts ran, hear every console
message and uncaught exception, click, and take a full-page screenshot.

No websocket and no third-party package: Chromium reads commands on fd 3 and writes answers and
events on fd 4, each a JSON object ending in a NUL byte.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    return next((found for name in BROWSERS if (found := shutil.which(name))), None)


class Browser:
    """One headless Chromium; ``open`` gives a ``Page`` per report."""

    def __init__(self, binary: str, profile: Path) -> None:
        commands_read, self._commands = os.pipe()
        self._answers, answers_write = os.pipe()

        def wire() -> None:  # in the child: Chromium reads fd 3, writes fd 4
            os.dup2(commands_read, 3)
            os.dup2(answers_write, 4)

        self.process = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                "--remote-debugging-pipe",
                "--host-resolver-rules=MAP * ~NOTFOUND",  # a report that reached out would log an error
                "about:blank",
            ],
            preexec_fn=wire,
            pass_fds=(3, 4),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(commands_read)
        os.close(answers_write)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + 60
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def wait_for(self, method: str, session: str) -> dict[str, Any]:
        deadline = time.monotonic() + 60
        while True:
            found = next((e for e in self.events if e.get("method") == method and e.get("sessionId") == session), None)
            if found is not None:
                self.events.remove(found)
                return found
            self.events.append(self._read(deadline))

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            ready, _, _ = select.select([self._answers], [], [], left)
            if ready:
                chunk = os.read(self._answers, 1 << 20)
                if not chunk:
                    raise EOFError("Chromium closed its end of the pipe")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def open(self, path: Path, width: int = 1280, height: int = 900) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Page", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        self.send("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
        self.wait_for("Page.loadEventFired", session)
        return Page(self, session)

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (OSError, EOFError, TimeoutError, RuntimeError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._commands)
        os.close(self._answers)


class Page:
    """A report open in the browser."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def evaluate(self, expression: str) -> Any:
        result = self.browser.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=self.session
        )
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression!r} raised in the page: {result['exceptionDetails']}")
        return result["result"].get("value")

    def console(self) -> list[str]:
        """Every console message, uncaught exception and error the browser logged for this page."""
        said = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session:
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled":
                said.append(f"console.{params['type']}: " + " ".join(str(a.get("value")) for a in params["args"]))
            elif method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                said.append(f"uncaught: {details.get('exception', {}).get('description') or details.get('text')}")
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                said.append(f"log {params['entry']['level']}: {params['entry']['text']}")
        return said

    def screenshot(self, path: Path) -> Path:
        shot = self.browser.send(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=self.session
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
