"""``eval/`` is a record a reader can follow: one folder a study, each with a README that opens with the question
and the answer, no code, small enough to clone, and every ``eval/`` path the docs cite present."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EVAL = ROOT / "eval"
MAX_BYTES = 10_000_000
MAX_FILES = 150
CODE = {".py", ".sh", ".patch"}
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CITED = re.compile(r"(?<![\w/.-])eval/[\w.*/-]*[\w/]")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s#]+)(?:#[^)]*)?\)")


def tracked() -> list[Path]:
    """The files of ``eval/`` that git tracks (a walk without git-ignored files where git is not there)."""
    if shutil.which("git") and (ROOT / ".git").exists():
        done = subprocess.run(["git", "ls-files", "-z", "eval"], cwd=ROOT, capture_output=True, text=True)
        if done.returncode == 0:
            return [ROOT / name for name in done.stdout.split("\0") if name and (ROOT / name).is_file()]
    ignored = re.compile(r"eval/keep-rule-minilm/captures-.*\.jsonl$")
    return [p for p in EVAL.rglob("*") if p.is_file() and not ignored.search(p.relative_to(ROOT).as_posix())]


def studies() -> list[Path]:
    return sorted(p for p in EVAL.iterdir() if p.is_dir())


def test_eval_is_at_most_10_mb_and_150_files():
    files = tracked()
    size = sum(p.stat().st_size for p in files)
    assert len(files) <= MAX_FILES, f"{len(files)} files in eval/ (at most {MAX_FILES})"
    assert size <= MAX_BYTES, f"eval/ is {size / 1e6:.1f} MB (at most {MAX_BYTES / 1e6:.0f})"


def test_no_code_in_eval():
    code = [p.relative_to(ROOT).as_posix() for p in tracked() if p.suffix in CODE]
    assert not code, f"code belongs in scripts/ (python -m scripts.NAME), not eval/: {code}"


def test_eval_holds_study_folders_and_its_index_only():
    loose = [p.name for p in EVAL.iterdir() if p.is_file() and p.name != "README.md"]
    assert not loose, f"a result goes in its study's folder: {loose}"


@pytest.mark.parametrize("study", studies(), ids=lambda p: p.name)
def test_every_study_opens_with_its_question_answer_table_and_command(study):
    """The question, then the answer, then a table, then the command that reproduces it (in a code block)."""
    readme = study / "README.md"
    assert readme.is_file(), f"{study.name}/ has no README.md"
    text = readme.read_text(encoding="utf-8")
    opening = "\n".join(text.splitlines()[:12]).lower()
    assert text.startswith("# ") and opening.index("question") < opening.index("answer"), study.name
    table = re.search(r"^\|[-| :]+\|$", text, re.M)
    blocks = re.finditer(r"^ *```.*?\n(.*?)^ *```", text, re.M | re.S)
    command = next((b for b in blocks if re.search(r"python -m scripts\.|python scripts/|infill ", b.group(1))), None)
    assert table and command, f"{study.name}: no table or no command in a code block"
    assert text.lower().index("answer") < table.start() < command.start(), f"{study.name}: answer, table, command"


def test_every_study_is_cited_by_the_docs():
    cited = {path.split("/")[1] for page in PAGES for path in CITED.findall(page.read_text(encoding="utf-8"))}
    assert not [study.name for study in studies() if study.name not in cited]


def test_every_relative_link_of_eval_resolves():
    broken = []
    for page in sorted(EVAL.rglob("*.md")):
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        text = re.sub(r"`[^`]*`", "", text)  # code holds no links
        for target in LINK.findall(text):
            if not re.match(r"[a-z]+:", target) and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_every_eval_path_the_docs_cite_exists():
    missing = []
    for page in PAGES:
        for path in CITED.findall(page.read_text(encoding="utf-8")):
            if not any(ROOT.glob(path.rstrip("/"))):
                missing.append(f"{page.relative_to(ROOT)}: {path}")
    assert not missing, missing


def test_docs_link_to_eval_study_folders_not_raw_files():
    """A link into ``eval/`` names a study (its README) or a nested report, a figure or a protocol; not rows."""
    raw = []
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if "eval/" in target and target.endswith((".json", ".jsonl", ".txt")):
                raw.append(f"{page.relative_to(ROOT)}: {target}")
    assert not raw, raw
