"""Headless Chromium (Debian's package) for the tests of the --html reports: a page rendered
to a PNG and its DOM dumped, with no network (Chromium's background services off) and a new
profile each time; console errors fail the test."""
import os
import shutil
import subprocess

import pytest
from PIL import Image

from conftest import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def require_chromium():
    """Skip the calling test module without Chromium, except under CI, where it is an error."""
    if CHROMIUM:
        return
    if os.environ.get("CI"):
        raise RuntimeError("Chromium is needed for the --html tests: apt-get install -y chromium (.ci/run does)")
    pytest.skip("no Chromium on this machine (apt-get install -y chromium)", allow_module_level=True)

HOT = (0xD1, 0x49, 0x5B)  # the hot bars' fill (src/html.rs)


def chromium(tmp_path, page, *args):
    """Run headless Chromium on `page` (no network, a new profile): (stdout, stderr)."""
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-extensions", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
           *args, page.as_uri()]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout, p.stderr


def open_in_browser(tmp_path, html, shot_name):
    """The DOM Chromium built from `html`, and its screenshot as an RGB image; console errors fail."""
    dom, log = chromium(tmp_path, html, "--dump-dom")
    png = tmp_path / f"{shot_name}.png"
    _, log2 = chromium(tmp_path, html, "--hide-scrollbars", "--window-size=1100,1800", f"--screenshot={png}")
    for l in (log + log2).splitlines():
        assert not ("CONSOLE" in l and ("rror" in l or "Refused" in l or "Uncaught" in l)), l
    img = Image.open(png).convert("RGB")
    if os.environ.get("SKEWJOIN_SCREENSHOTS"):
        (ROOT / "docs" / "img").mkdir(parents=True, exist_ok=True)
        shutil.copy(png, ROOT / "docs" / "img" / f"{shot_name}.png")
    return dom, img


def red_pixels(img):
    b = img.tobytes()
    return sum(1 for i in range(0, len(b), 3) if all(abs(b[i + k] - HOT[k]) <= 6 for k in range(3)))


