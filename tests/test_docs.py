"""The README and docs a new user meets: the README short, every relative link (and its #anchor) found, and no
number of the project's issue tracker in the package, the docs, the tests or the scripts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ISSUE = re.compile(r"[Ii]ssue [0-9]+|issues? #?[0-9]+")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
TRACKER_FREE = ("infill", "docs", "tests", "scripts")


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in page.read_text().splitlines() if re.match(r"#{1,6} ", line)}


def test_readme_is_at_most_10000_characters():
    assert len((ROOT / "README.md").read_text()) <= 10_000


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_points_to_a_file_and_its_anchor(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"


def test_slug_is_githubs():
    assert slug(" Score & rank") == "score--rank" and slug(" The default: `auto`") == "the-default-auto"


def test_no_issue_numbers_of_the_tracker():
    found = []
    for folder in TRACKER_FREE:
        for path in sorted((ROOT / folder).rglob("*")):
            name = path.relative_to(ROOT).as_posix()
            if path.suffix not in {".py", ".md", ".js", ".html", ".toml"} or path == Path(__file__):
                continue
            found += [f"{name}:{n}" for n, line in enumerate(path.read_text().splitlines(), 1) if ISSUE.search(line)]
    found += [
        f"README.md:{n}"
        for n, line in enumerate((ROOT / "README.md").read_text().splitlines(), 1)
        if ISSUE.search(line)
    ]
    assert not found, found
