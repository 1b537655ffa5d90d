"""The reference review's report.html, opened in a real headless Chromium: the verdict matrices and every
figure render with a non-zero size, nothing is fetched from the network, and the console stays clean."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REPORT = REPO / "reports" / "reference" / "report.html"
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                  "--disable-background-networking", "--disable-component-update"]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on this machine (.ci/run installs Debian's chromium)")


@pytest.mark.slow
def test_report_renders_in_headless_chromium():
    """Matrices and figures are visible with non-zero size; no console error, no request leaves the file."""
    sync_api = pytest.importorskip("playwright.sync_api")
    executable = _chromium()
    errors, requests = [], []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("request", lambda request: requests.append(request.url))
            page.goto(REPORT.as_uri())
            page.wait_for_load_state("load")
            matrices = page.query_selector_all("table[id^='verdict-matrix-']")
            assert len(matrices) >= 2, "one verdict matrix per design"
            for matrix in matrices:
                box = matrix.bounding_box()
                assert box and box["width"] > 0 and box["height"] > 0
                assert matrix.query_selector_all("td.bad") and matrix.query_selector_all("td.good")
            plots = page.query_selector_all("figure.plot svg")
            assert len(plots) >= 8
            for plot in plots:
                box = plot.bounding_box()
                assert box and box["width"] > 0 and box["height"] > 0, plot.evaluate("e => e.parentNode.dataset.name")
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=False)
        finally:
            browser.close()
    assert errors == []
    assert all(url.startswith("file:") or url.startswith("data:") for url in requests), requests
