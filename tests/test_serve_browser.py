"""The page of ``infill serve`` in headless Chromium (Debian's ``chromium``), driven by Playwright, on the dev MLM:
every mode as a user would use it. Fill: fillings, marginals, traces and the baseline beside them; span
blanks with an include word and the lengths chosen; progress, cancel and errors. Rewrite: variants with
the changed words marked. Score & rank: a bar per sentence and per option. Augment: variants of each sentence
with their changed words marked, the protected ones kept, deleted words struck through, keep-close only for
substitute, and bad input in one line."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="infill serve needs the [serve] extra (starlette, uvicorn)")
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the browser test needs playwright (pip install playwright)"
)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no chromium installed (apt-get install chromium); .ci/run installs it", allow_module_level=True)

from test_serve import running  # noqa: E402

from infill import Infiller  # noqa: E402
from infill.serve import create_app  # noqa: E402

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = "INFILL_SCREENSHOTS"  # set to a folder (docs) to save the page of each mode; tests write no tracked file
pytestmark = pytest.mark.slow
REVERTED = "n => [...n.childNodes].map(c => c.nodeName === 'MARK' ? c.title.slice(5) : c.textContent).join('')"
"""A variant's text with each marked word put back to the source's word (its title: ``was: WORD``)."""


@pytest.fixture(scope="module")
def page(dev_model_path, tmp_path_factory):
    with running(create_app(Infiller(str(dev_model_path)))) as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url + "/")
            page.wait_for_selector("#method option", state="attached")
            yield page
        finally:
            browser.close()


def shoot(page, name: str, tmp_path: Path) -> None:
    page.screenshot(path=str(Path(os.environ.get(SCREENSHOTS, tmp_path)) / name), full_page=True)


def test_header_names_the_model_without_its_path(page, dev_model_path):
    assert page.inner_text("#model").startswith(dev_model_path.name + " ·")
    assert "/" not in page.inner_text("header")


def test_fill_shows_fillings_marginals_traces_and_the_baseline(page, tmp_path):
    assert page.input_value("#steps") == "4"  # the fast preset
    hint = page.inner_text("#fill .hint")
    assert all(s in hint for s in ("[MASK*?]", "[MASK*m-n]", "word"))
    page.fill("#template", "The [MASK] sat on the [MASK] [MASK].")
    page.select_option("#method", "gibbs")  # chains: a trace line each
    page.fill("#seed", "3")
    page.check("#baseline")
    page.click("#run")
    page.wait_for_function("document.querySelectorAll('#results ol.fillings').length == 2", timeout=60_000)
    gibbs = page.locator("section.run[data-method=gibbs]")
    baseline = page.locator("section.run[data-method=left-to-right]")
    assert gibbs.locator("ol.fillings li").count() == 5
    assert gibbs.locator("ol.fillings li").first.locator("mark").count() == 3  # the blanks highlighted
    assert "PLL" in gibbs.locator("ol.fillings li").first.inner_text()
    assert gibbs.locator(".marginals .blank").count() == 3 and gibbs.locator(".marginals .fills .bar").count() >= 2
    assert gibbs.locator(".lengths").count() == 0  # token blanks: no lengths to show
    assert gibbs.locator("svg.trace-energy path").count() == 8  # one line per chain
    assert gibbs.locator("svg.trace-acceptance path").count() == 8
    assert baseline.locator("ol.fillings li").count() == 5
    shoot(page, "serve.png", tmp_path)


def test_fill_at_two_blanks_searches_and_draws_no_chain_traces(page):
    page.fill("#template", "The [MASK] sat on the [MASK].")  # two blanks with a top: auto runs the product search
    page.select_option("#method", "auto")
    page.fill("#seed", "3")
    page.check("#baseline")  # each test sets what it reads: xdist may run any of them first
    page.click("#run")
    page.wait_for_function("document.querySelectorAll('#results ol.fillings').length == 2", timeout=60_000)
    run = page.locator("section.run[data-method=auto]")
    assert "product-search" in run.locator("h2").inner_text()
    assert run.locator(".marginals .blank").count() == 2
    assert run.locator("svg.trace").count() == 0  # no chains, nothing to trace


def test_fill_spans_with_an_include_word_show_the_lengths_chosen(page, tmp_path):
    page.select_option("#examples", label="She was [MASK*?] the garden when it started to rain.")
    page.select_option("#method", "auto")
    page.fill("#include", "running")
    page.fill("#seed", "0")
    page.check("#baseline")
    page.click("#run")
    page.wait_for_selector("#results ol.fillings li", timeout=90_000)
    run = page.locator("#results section.run")
    assert run.count() == 1 and "no left-to-right baseline for word blanks" in page.inner_text("#results")
    fills = run.locator("ol.fillings li mark").all_inner_texts()
    assert len(fills) == 5 and all("running" in fill.split() for fill in fills)
    lengths = run.locator(".marginals .lengths .bar")
    assert lengths.count() == 4  # one bar per length [MASK*?] allows: 1 to 4 words
    shares = [float(s.rstrip("%")) for s in run.locator(".lengths .bar span:last-child").all_inner_texts()]
    assert sum(shares) == pytest.approx(100, abs=0.5)
    assert sum(shares[len(f.split()) - 1] > 0 for f in fills) == 5  # the lengths of the fillings shown
    shoot(page, "serve-fill.png", tmp_path)
    page.fill("#include", "")


def test_fill_progress_cancel_and_errors(page):
    page.fill("#template", "The [MASK] sat.")
    page.select_option("#method", "gibbs")  # auto would stop when its budget is spent
    page.fill("#steps", "100000")
    page.uncheck("#baseline")
    page.click("#run")
    page.wait_for_selector("#fill .status progress", timeout=20_000)  # progress after 2 s
    page.click("#fill button.cancel")
    page.wait_for_function("document.querySelector('#fill .status').textContent.includes('cancelled')")
    page.wait_for_selector("#run:not([disabled])", timeout=20_000)
    page.fill("#steps", "4")
    for template, message in [("no blank", "template has no [MASK] blank"), ("a [MASK*3-1] day", "needs M <= N")]:
        page.fill("#template", template)
        page.click("#run")
        page.wait_for_selector("#fill .status.error")
        assert message in page.inner_text("#fill .status")
    page.fill("#template", "The [MASK] sat.")
    page.fill("#forbid", ",")
    page.click("#run")
    page.wait_for_function("document.querySelector('#fill .status').textContent.includes('cannot forbid')")
    page.fill("#forbid", "")


def test_rewrite_marks_the_changed_words(page, tmp_path):
    page.click("nav button[data-mode=rewrite]")
    assert page.is_hidden("#fill") and page.is_visible("#rewrite")
    source = "The old man walked slowly to the market."
    page.fill("#rw-text", source)
    page.fill("#rw-change", "0.3")
    page.fill("#rw-seed", "0")
    page.click("#rw-run")
    page.wait_for_selector("#rw-results ol.fillings li", timeout=90_000)
    variants = page.locator("#rw-results ol.fillings li")
    assert variants.count() == 5 and source in page.inner_text("#rw-results .source")
    words = source.rstrip(".").split()
    for i in range(variants.count()):
        item = variants.nth(i)
        blanks = item.locator("mark.changed, span.kept")  # every word of one token is a blank
        assert blanks.count() == len(words)
        changed = [j for j in range(len(words)) if blanks.nth(j).evaluate("b => b.tagName") == "MARK"]
        assert all(blanks.nth(j).inner_text() != words[j] for j in changed)  # marked: not the source's word
        assert all(blanks.nth(j).get_attribute("title") == f"was: {words[j]}" for j in changed)
        assert all(blanks.nth(j).inner_text() == words[j] for j in range(len(words)) if j not in changed)
        assert f"{len(changed)} of {len(words)} words changed" in item.inner_text()
    assert page.locator("#rw-results mark.changed").count() > 0
    assert page.locator("#rw-results svg.trace-acceptance path").count() == 8
    shoot(page, "serve-rewrite.png", tmp_path)
    page.fill("#rw-text", "a [MASK] day")
    page.click("#rw-run")
    page.wait_for_selector("#rewrite .status.error", timeout=30_000)
    assert "has a [MASK]" in page.inner_text("#rewrite .status")


def test_score_and_rank_draw_a_bar_each(page, tmp_path):
    page.click("nav button[data-mode=score]")
    page.click("#sc-run")
    page.wait_for_selector("#sc-results .scored", timeout=30_000)
    sentences = page.locator("#sc-results .scored")
    assert sentences.count() == 3
    scores = [float(t) for t in page.locator("#sc-results .scored .bar span").all_inner_texts()]
    assert scores[0] == max(scores) and all(s < 0 for s in scores)  # "the cat sat on the mat ." is the likeliest
    widths = page.eval_on_selector_all("#sc-results .scored .bar div", "bars => bars.map(b => b.style.width)")
    assert widths[0] == "100%" and len(widths) == 3
    assert sentences.first.locator(".tokens span").count() == 7  # one shaded token per scored token
    page.click("#rk-run")
    page.wait_for_selector("#rk-results .scored", timeout=30_000)
    options = page.locator("#rk-results .scored p b").all_inner_texts()
    assert sorted(options) == ["ice cream", "pianist", "violinist", "xylophonist"] and options[0] == "pianist"
    ranked = [float(t) for t in page.locator("#rk-results .scored .bar span").all_inner_texts()]
    assert ranked == sorted(ranked, reverse=True)
    shoot(page, "serve-score.png", tmp_path)
    page.fill("#rk-template", "the [MASK] played a [MASK] .")
    page.click("#rk-run")
    page.wait_for_selector("#score .status.error")
    assert re.search(r"exactly one \[MASK\] blank, got 2", page.inner_text("#score .status"))


def test_augment_marks_the_changed_words_of_each_variant(page, tmp_path):
    page.click("nav button[data-mode=augment]")
    assert page.is_hidden("#score") and page.is_visible("#augment")
    page.select_option("#au-examples", index=1)  # two sentences
    page.fill("#au-n", "3")
    page.fill("#au-seed", "0")
    page.click("#au-run")
    page.wait_for_selector("#au-results ol.fillings li", timeout=90_000)
    sentences = page.locator("#au-results .augmented")
    assert sentences.count() == 2 and page.locator("#au-results .shortfall").count() == 0
    for i in range(sentences.count()):
        source = sentences.nth(i).locator(".source b").inner_text()
        variants = sentences.nth(i).locator("ol.fillings li")
        assert variants.count() == 3
        for j in range(variants.count()):
            filling, marks = variants.nth(j).locator(".filling"), variants.nth(j).locator("mark.changed")
            assert marks.count() >= 1 and filling.text_content() != source
            assert all(m.startswith("was: ") for m in marks.evaluate_all("ms => ms.map(m => m.title)"))
            # each marked word put back to the source's word gives the source: only the marked words changed
            assert filling.evaluate(REVERTED) == source
            line = variants.nth(j).locator(".energy").inner_text()
            assert f"{marks.count()} changed" in line and "PLL" in line and "closeness" in line
    shoot(page, "serve-augment.png", tmp_path)
    page.select_option("#au-examples", index=2)  # protected words
    page.click("#au-run")
    page.wait_for_function("document.querySelector('#au-results .source b')?.textContent.includes('Anna')")
    page.wait_for_selector("#au-results ol.fillings li", timeout=90_000)
    kept = page.locator("#au-results ol.fillings .filling").all_text_contents()
    assert kept and all(all(w in v for w in ("Anna", "New York", "12 ", "10am")) for v in kept)  # protected, numbers


def test_augment_bad_input_shows_one_line(page):
    page.click("nav button[data-mode=augment]")
    page.fill("#au-texts", "The old man walked slowly to the market.")
    page.fill("#au-n", "0")
    page.click("#au-run")
    page.wait_for_function("document.querySelector('#augment .status').textContent.includes('n must be')")
    assert page.locator("#augment .status.error").count() == 1
    page.fill("#au-n", "3")
    page.fill("#au-texts", "42 1999 2000")
    page.click("#au-run")
    page.wait_for_function(
        "document.querySelector('#augment .status').textContent.includes('nothing to change')", timeout=30_000
    )
    status = page.inner_text("#augment .status")
    assert status.startswith("sentence 1: nothing to change in '42 1999 2000'") and "\n" not in status
    page.wait_for_selector("#au-run:not([disabled])")


def test_augment_delete_strikes_the_deleted_words_through(page):
    page.click("nav button[data-mode=augment]")
    source = "The old man walked slowly to the market."
    page.fill("#au-texts", source)
    page.fill("#au-n", "2")
    page.select_option("#au-action", "delete")
    assert page.is_disabled("#au-keep_close")
    page.click("#au-run")
    page.wait_for_selector("#au-results ol.fillings li", timeout=60_000)
    variants = page.locator("#au-results ol.fillings li")
    assert variants.count() == 2 and page.locator("#au-results mark").count() == 0
    for j in range(variants.count()):
        deleted = variants.nth(j).locator("del")
        assert deleted.count() >= 1
        assert deleted.first.evaluate("d => getComputedStyle(d).textDecorationLine") == "line-through"
        assert variants.nth(j).locator(".filling").text_content() == source  # each deleted word shown in its place
        text = variants.nth(j).get_attribute("title")  # the variant: one word fewer per struck-through one
        assert len(text.split()) == len(source.split()) - deleted.count()
    page.select_option("#au-action", "substitute")


def test_augment_keep_close_is_disabled_but_for_substitute(page):
    page.click("nav button[data-mode=augment]")
    assert page.input_value("#au-action") == "substitute" and page.is_enabled("#au-keep_close")
    assert page.input_value("#au-keep_close") == "0" and page.is_checked("#au-pll")
    page.select_option("#au-action", "insert")
    assert page.is_disabled("#au-keep_close")
    page.select_option("#au-action", "substitute")
    assert page.is_enabled("#au-keep_close")
