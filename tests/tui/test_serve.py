"""`agentctl serve`: the terminal UI in a real browser (headless Chromium, Debian's
`chromium`), driven through the DevTools protocol: the page loads, the UI's first
screen reaches the browser, and a screenshot of it is taken (kept in the test's
directory, `serve.png`) and checked.

Without chromium (or textual-serve) the browser test is skipped, unless
AGENTCTL_REQUIRE_BROWSER=1 (as in CI, `.ci/run`), where that is a failure."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from tests.support.rig import REPO, SAMPLE_DB
from tests.support.sampledb import cli

REQUIRED = os.environ.get("AGENTCTL_REQUIRE_BROWSER") == "1"


def _need(what: str, present: bool) -> None:
    if present:
        return
    if REQUIRED:
        pytest.fail(f"{what} is missing and AGENTCTL_REQUIRE_BROWSER=1")
    pytest.skip(f"{what} is not installed")


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on port {port}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit truecolour PNG (what Chromium's
    screenshots are), unfiltered."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows


# Put in the page before its own script: a copy of what the UI's WebSocket receives (the
# terminal output Textual writes), which the canvas the terminal draws on does not show.
CAPTURE = """
(() => {
  window.__agentctl = "";
  const decoder = new TextDecoder();
  const Original = window.WebSocket;
  window.WebSocket = function (...args) {
    const ws = new Original(...args);
    ws.addEventListener("message", (e) => {
      if (typeof e.data !== "string") window.__agentctl += decoder.decode(new Uint8Array(e.data), {stream: true});
    });
    return ws;
  };
  window.WebSocket.prototype = Original.prototype;
})();
"""


async def _browse(devtools_port: int, url: str, shot: Path, want: list[str]) -> str:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        for _ in range(100):
            try:
                async with http.get(f"http://127.0.0.1:{devtools_port}/json/list") as r:
                    pages = [t for t in await r.json() if t["type"] == "page"]
                if pages:
                    break
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.2)
        async with http.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            ids = iter(range(1, 10**6))

            async def call(method: str, **params):
                n = next(ids)
                await ws.send_json({"id": n, "method": method, "params": params})
                async for msg in ws:
                    reply = json.loads(msg.data)
                    if reply.get("id") == n:
                        assert "error" not in reply, reply
                        return reply["result"]
                raise AssertionError("the browser closed the connection")

            async def js(expression: str):
                return (await call("Runtime.evaluate", expression=expression, returnByValue=True))[
                    "result"
                ].get("value")

            await call("Page.enable")
            await call("Page.addScriptToEvaluateOnNewDocument", source=CAPTURE)
            await call("Page.navigate", url=url)
            received = ""
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                received = await js("window.__agentctl || ''") or ""
                shown = await js("document.body && document.body.classList.contains('-first-byte')")
                plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", received)
                if shown and all(w in received or w in plain for w in want):
                    break
                await asyncio.sleep(0.5)
            await asyncio.sleep(1.5)  # the terminal's fade-in, and the canvas drawn
            png = base64.b64decode((await call("Page.captureScreenshot", format="png"))["data"])
            shot.write_bytes(png)
            return received


def serve_in_a_browser(db: str, tmp_path: Path, want: list[str]) -> tuple[str, Path]:
    """`agentctl --db DB serve` opened in headless Chromium until the UI's output holds
    `want`: (what the page's WebSocket received, the screenshot's path)."""
    try:
        import textual_serve  # noqa: F401
    except ImportError:
        _need("textual-serve (pip install 'agentctl[web]')", False)
    chromium = _chromium()
    _need("chromium (apt-get install chromium)", chromium is not None)

    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server = subprocess.Popen(
        [sys.executable, "-m", "agentctl", "--db", db, "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    browser = None
    try:
        _wait_port(port, server)
        devtools = _free_port()
        browser = subprocess.Popen(
            [
                chromium,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--hide-scrollbars",
                f"--remote-debugging-port={devtools}",
                f"--user-data-dir={tmp_path / 'profile'}",
                "--window-size=1280,800",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        shot = tmp_path / "serve.png"
        return asyncio.run(_browse(devtools, f"http://127.0.0.1:{port}/", shot, want)), shot
    finally:
        if browser is not None:
            _stop(browser)
        _stop(server)


def test_serve_shows_the_thread_list_in_a_browser(tmp_path):
    threads = ["loop-research-7", "coder-add-cli-flag", "support-1042"]
    received, shot = serve_in_a_browser(str(SAMPLE_DB), tmp_path, threads)

    # the UI's first screen reached the browser: the thread list, read-only
    for thread in threads:
        assert thread in received, thread
    assert "7 threads" in received and "READ-ONLY" in received
    # and the screenshot shows a drawn terminal, not the start page: a dark screen with
    # many colours (text, borders, the highlighted row) over most of its rows
    width, height, rows = _png_pixels(shot.read_bytes())
    assert width == 1280 and height >= 400
    busy = [row for row in rows[::8] if len({row[i : i + 3] for i in range(0, len(row), 12)}) >= 4]
    assert len(busy) >= len(rows[::8]) // 2, len(busy)
    # the footer's keys are drawn: text on the last line, not an empty bar (Textual's
    # footer showed nothing while the page had no focus)
    bpp = len(rows[0]) // width
    footer = [row for row in rows[-40:] if len({row[i : i + 3] for i in range(0, len(row), bpp)}) >= 6]
    assert footer, "the footer line is empty"
    # every glyph the UI drew is one the browser can draw: xterm.js draws box drawing
    # and block elements itself; anything else needs a font that has it (fc-list), or
    # the browser draws tofu (the branch glyph "⑂" did)
    _need("fc-list (fontconfig)", shutil.which("fc-list") is not None)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", received)
    drawn = {ch for ch in text if ord(ch) > 0x7E and not 0x2500 <= ord(ch) <= 0x259F and ch.isprintable()}
    tofu = [
        ch
        for ch in sorted(drawn)
        if not subprocess.run(
            ["fc-list", f":charset={ord(ch):x}", "family"], capture_output=True, text=True
        ).stdout.strip()
    ]
    assert not tofu, [f"{ch} U+{ord(ch):04X}" for ch in tofu]
    assert "↳" in drawn  # the branch glyph is on the first screen (coder-fix-flaky-test's branch)


def test_serve_shows_an_agno_database_in_a_browser(tmp_path):
    """The Agno sample (sample_db/agno.db, written by agno 3) served: its sessions reach
    the browser, read-only, with their Agno columns and the head run's summary."""
    db = tmp_path / "agno.db"
    shutil.copyfile(REPO / "sample_db" / "agno.db", db)
    before = db.read_bytes()
    received, shot = serve_in_a_browser(
        str(db), tmp_path, ["janitor", "4 threads", "READ-ONLY", "second → forked"]
    )
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", received)
    for word in ("chat", "team", "flow", "janitor", "4 threads", "READ-ONLY", "second → forked"):
        assert word in text, word
    width, height, rows = _png_pixels(shot.read_bytes())
    assert width == 1280 and height >= 400
    assert db.read_bytes() == before  # served read-only: nothing written


def test_serve_refuses_without_textual_serve(monkeypatch):
    monkeypatch.setitem(sys.modules, "textual_serve.server", None)
    monkeypatch.setitem(sys.modules, "textual_serve", None)
    r = cli(str(SAMPLE_DB), "serve")
    assert r.exit_code == 1 and "pip install 'agentctl[web]'" in r.stderr


def test_serve_is_read_only_on_localhost_unless_told(monkeypatch):
    pytest.importorskip("textual_serve")
    import textual_serve.server

    started = []

    class FakeServer:
        def __init__(self, command, host, port, title):
            started.append((command, host, port, title, os.environ.get("AGENTCTL_DB")))

        def serve(self):
            pass

    monkeypatch.setattr(textual_serve.server, "Server", FakeServer)
    monkeypatch.delenv("AGENTCTL_DB", raising=False)
    r = cli(str(SAMPLE_DB), "serve")
    assert r.exit_code == 0 and "warning" not in r.stderr
    command, host, port, title, db = started[-1]
    assert command.endswith("-m agentctl tui --read-only") and (host, port) == ("127.0.0.1", 8000)
    assert db == str(SAMPLE_DB) and str(SAMPLE_DB) not in command  # not on the command line
    r = cli(str(SAMPLE_DB), "serve", "--host", "0.0.0.0", "--port", "8080", "--allow-writes")
    assert r.exit_code == 0
    command, host, port, _, _ = started[-1]
    assert command.endswith("-m agentctl tui") and (host, port) == ("0.0.0.0", 8080)
    assert "warning: serving on 0.0.0.0:8080, not localhost" in r.stderr and "--allow-writes" in r.stderr
    r = cli(str(SAMPLE_DB), "serve", "--host", "0.0.0.0")
    assert "warning" in r.stderr and "can change it" not in r.stderr


def test_tui_under_the_web_driver_runs_off_a_terminal(monkeypatch):
    """textual-serve gives the UI a pipe, not a terminal: `tui` must not refuse there."""
    import agentctl.cli.commands.tui as tui_cli

    monkeypatch.setattr(tui_cli, "_stdout_is_terminal", lambda: False)
    ran = []
    monkeypatch.setattr("agentctl.tui.run", lambda db, **kw: ran.append((db, kw)))
    r = cli(str(SAMPLE_DB), "tui", "--read-only")
    assert r.exit_code == 2 and not ran
    monkeypatch.setenv("TEXTUAL_DRIVER", "textual.drivers.web_driver:WebDriver")
    r = cli(str(SAMPLE_DB), "tui", "--read-only")
    assert r.exit_code == 0 and ran == [
        (str(SAMPLE_DB), {"readonly": True, "format": None, "agent": None, "config": None, "python": None})
    ]


def test_ci_installs_the_browser_and_requires_it():
    run = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "apt-get install -y -qq chromium" in run and "export AGENTCTL_REQUIRE_BROWSER=1" in run
    assert run.index("AGENTCTL_REQUIRE_BROWSER=1") < run.index("python -m pytest")
