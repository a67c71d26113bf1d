"""A screenshot of the annotation app's task page, for the README (issue 12): run by `make demo`.

    .venv/bin/python scripts/human_screenshot.py PROJECT_DIR OUT.png

Serves the project's human study on a free local port, invites an annotator named "screenshot",
opens their link in Debian's chromium (Playwright, the dev extra), plays the first clip a moment,
steps to the second difference, chooses an answer and writes a reason (nothing is submitted), and
saves the page. Exits 2 when Playwright or /usr/bin/chromium is missing.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--autoplay-policy=no-user-gesture-required"]
REASON = ("Answer A matches the clips: the shape under the sign has the colour and the place in the frame that "
          "the video shows, while answer B describes a colour that never appears on screen.")


def main(project: Path, out: Path) -> int:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("no screenshot: playwright is not installed (pip install -e '.[dev]')", file=sys.stderr)
        return 2
    if not Path(CHROMIUM).exists():
        print(f"no screenshot: {CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 2
    import uvicorn

    from playlisteval.config import load_settings
    from playlisteval.human.annotators import invite
    from playlisteval.human.app import make_app
    from playlisteval.human.tasks import find_study
    from playlisteval.store import open_store

    settings = load_settings(project)
    engine = open_store(settings)
    token = invite(engine, find_study(engine, settings.human.study), "screenshot", reissue=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(make_app(settings), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/join/{token}")
            page.locator("video").first.evaluate("v => { v.muted = true; return v.play(); }")
            page.wait_for_function("() => document.querySelector('video').currentTime > 1", timeout=20_000)
            page.locator("video").first.evaluate("v => v.pause()")
            page.click("#next-diff")
            page.click("#next-diff")
            page.check("input[name=choice][value=A]")
            page.fill("#reason", REASON)
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out), full_page=True)
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
