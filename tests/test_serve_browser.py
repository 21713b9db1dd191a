"""The page of ``infill serve`` in headless Chromium (Debian's ``chromium``), driven by Playwright, on the dev MLM:
type a template, wait for the fillings, see the marginals, the trace plots and the baseline beside them."""
from __future__ import annotations

import shutil
import os

import pytest

pytest.importorskip("starlette", reason="infill serve needs the [serve] extra (starlette, uvicorn)")
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="the browser test needs playwright (pip install playwright)")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no chromium installed (apt-get install chromium); .ci/run installs it", allow_module_level=True)

from test_serve import running  # noqa: E402

from infill import Infiller  # noqa: E402
from infill.serve import create_app  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOT = "INFILL_SCREENSHOT"  # set to a path (docs/serve.png) to save the page; tests write no tracked file


@pytest.mark.slow
def test_page_shows_fillings_marginals_traces_and_the_baseline(dev_model_path, tmp_path):
    with running(create_app(Infiller(str(dev_model_path)))) as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url + "/")
            page.wait_for_selector("#method option", state="attached")
            assert page.input_value("#steps") == "4"  # the fast preset
            page.fill("#template", "The [MASK] sat on the [MASK].")
            page.fill("#seed", "3")
            page.check("#baseline")
            page.click("#run")
            page.wait_for_function("document.querySelectorAll('ol.fillings').length == 2", timeout=60_000)
            gibbs = page.locator("section.run[data-method=gibbs]")
            baseline = page.locator("section.run[data-method=left-to-right]")
            assert gibbs.locator("ol.fillings li").count() == 5
            assert gibbs.locator("ol.fillings li").first.locator("mark").count() == 2  # the blanks highlighted
            assert "PLL" in gibbs.locator("ol.fillings li").first.inner_text()
            assert gibbs.locator(".marginals .blank").count() == 2 and gibbs.locator(".marginals .bar").count() >= 2
            assert gibbs.locator("svg.trace-energy path").count() == 8  # one line per chain
            assert gibbs.locator("svg.trace-acceptance path").count() == 8
            assert baseline.locator("ol.fillings li").count() == 5
            page.screenshot(path=os.environ.get(SCREENSHOT, str(tmp_path / "serve.png")), full_page=True)

            page.fill("#template", "The [MASK] sat.")
            page.fill("#steps", "100000")
            page.uncheck("#baseline")
            page.click("#run")
            page.wait_for_selector("#status progress", timeout=20_000)  # progress after 2 s
            page.click("#cancel")
            page.wait_for_function("document.querySelector('#status').textContent.includes('cancelled')")
            page.wait_for_selector("#run:not([disabled])", timeout=20_000)

            page.fill("#template", "no blank")
            page.fill("#steps", "4")
            page.click("#run")
            page.wait_for_selector("#status.error")
            assert "template has no [MASK] blank" in page.inner_text("#status")
        finally:
            browser.close()
