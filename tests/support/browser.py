"""A headless Chromium for the viewer's end-to-end tests and its documentation screenshot: Debian's `chromium`
and `chromium-driver` (apt-get install -y chromium chromium-driver), driven by selenium (the `dev` extra)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
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
    "--autoplay-policy=no-user-gesture-required",
    "--mute-audio",
)


def _binaries() -> tuple[str | None, str | None]:
    browser = (
        os.environ.get("AUDIOEVAL_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    driver = os.environ.get("AUDIOEVAL_CHROMEDRIVER") or shutil.which("chromedriver")
    return browser, driver


def unavailable_reason() -> str | None:
    """Why no headless browser can be started here, or None when one can."""
    browser, driver = _binaries()
    if browser is None or driver is None:
        missing = " and ".join(n for n, p in (("chromium", browser), ("chromedriver", driver)) if p is None)
        return f"{missing} not found: apt-get install -y chromium chromium-driver (or bash scripts/bootstrap.sh dev)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install -e '.[dev]'"
    return None


@contextlib.contextmanager
def headless_chromium(width: int = 1440, height: int = 900) -> Iterator[Any]:
    """A selenium WebDriver on a fresh profile, closed (and its profile removed) afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = _binaries()
    if browser is None or driver_path is None:
        raise RuntimeError(unavailable_reason())
    profile = tempfile.mkdtemp(prefix="audioeval-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--window-size={width},{height}")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
