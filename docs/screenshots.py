"""Open built documentation pages in headless Chromium and save PNG screenshots.

Usage: ``python docs/screenshots.py [BUILD_DIR]`` (default ``docs/_build/html``). Screenshots go to
``docs/_build/screenshots/``. Exits non-zero if a page is missing, Chromium is missing or fails, or a
screenshot is blank (nearly one colour).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from matplotlib import image as mpimg

DOCS = Path(__file__).resolve().parent
#: (page under the HTML root, screenshot name, window height in pixels: tall enough to reach a figure)
PAGES = [("index.html", "landing.png", 1800),
         ("_generated/notebooks/06_inference_from_release.html", "notebook_06_inference.png", 1800),
         ("_generated/notebooks/05_elliptical_perturbations.html", "notebook_05_elliptical.png", 12000),
         ("mechanisms/iclp.html", "mechanism_iclp.png", 1800)]
#: a screenshot is blank when one colour covers more than this share of its pixels
BLANK_SHARE = 0.985


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit("chromium not found: install it (apt-get install -y chromium)")


def screenshot(browser: str, page: Path, out: Path, height: int = 1800) -> None:
    with tempfile.TemporaryDirectory(prefix="fdp-docs-chromium-") as profile:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--hide-scrollbars", f"--user-data-dir={profile}", f"--window-size=1280,{height}",
               "--virtual-time-budget=5000", f"--screenshot={out}", page.as_uri()]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if run.returncode != 0 or not out.is_file():
        raise SystemExit(f"chromium failed on {page} (exit {run.returncode}):\n{run.stderr[-2000:]}")


def blank_share(png: Path) -> float:
    """Share of pixels taken by the most frequent colour."""
    img = mpimg.imread(png)
    rgb = (np.asarray(img)[..., :3] * 255).round().astype(np.uint32).reshape(-1, 3)
    codes = (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]
    return float(np.bincount(np.unique(codes, return_inverse=True)[1]).max() / codes.size)


def main(argv: list[str]) -> int:
    root = (Path(argv[1]) if len(argv) > 1 else DOCS / "_build" / "html").resolve()
    out_dir = DOCS / "_build" / "screenshots"
    out_dir.mkdir(parents=True, exist_ok=True)
    browser = chromium()
    failures = []
    for rel, name, height in PAGES:
        page = root / rel
        if not page.is_file():
            failures.append(f"missing page: {page}")
            continue
        out = out_dir / name
        out.unlink(missing_ok=True)
        screenshot(browser, page, out, height)
        share = blank_share(out)
        status = "blank" if share > BLANK_SHARE else "ok"
        print(f"{status}: {out} ({rel}; most frequent colour covers {share:.1%})")
        if share > BLANK_SHARE:
            failures.append(f"blank screenshot: {out} ({share:.1%} one colour)")
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
