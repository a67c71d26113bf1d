"""A screenshot of `inspect view` showing a judge run that `playlisteval eval export` wrote (issue 41), for the
docs:

    .venv/bin/python scripts/inspect_screenshot.py LOG_DIR OUT.png

Starts Inspect AI's own viewer (`inspect view start`, the inspect extra) on a free local port over LOG_DIR,
opens it in Debian's chromium (Playwright, the dev extra), opens the newest log's sample list and saves the
page. Exits 2 when inspect_ai, Playwright or /usr/bin/chromium is missing; 1 when the viewer does not start.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except OSError:
            time.sleep(0.5)
    return False


def main(log_dir: Path, out: Path) -> int:
    inspect = shutil.which("inspect") or str(Path(sys.executable).with_name("inspect"))
    if not Path(inspect).exists():
        print("no screenshot: inspect_ai is not installed (pip install -e '.[inspect]')", file=sys.stderr)
        return 2
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("no screenshot: playwright is not installed (pip install -e '.[dev]')", file=sys.stderr)
        return 2
    if not Path(CHROMIUM).exists():
        print(f"no screenshot: {CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 2
    port = _free_port()
    viewer = subprocess.Popen([inspect, "view", "start", "--log-dir", str(log_dir), "--host", "127.0.0.1",
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if not _wait(f"http://127.0.0.1:{port}/", 60):
            print(f"no screenshot: `inspect view` did not answer on port {port}", file=sys.stderr)
            return 1
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_load_state("networkidle")
            log = page.get_by_text("playlisteval", exact=False).first
            log.wait_for(timeout=30_000)
            log.click()  # the log list: open the run's log
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(2_000)
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out), full_page=False)
            browser.close()
    finally:
        viewer.terminate()
        viewer.wait(timeout=10)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
