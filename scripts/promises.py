"""The benchmark "The default keeps every promise" on a held-out template suite.

The suite, ``corpora/promises/heldout.jsonl``, comes from Wang & Cho's bert-gen files (``wiki103.5k.txt``,
``tbc.5k.txt``) only, normalised and blanked as the calibration suite is (``scripts/harness.py``),
from sentences that neither ``corpora/calibration/{tune,check}.jsonl`` nor ``corpora/dlp-table3.tasks.jsonl``
use (different sentence ids), seed 38. Regimes: ``include-6`` (20 templates, 6 blanks, one removed content word
to include), ``2-4`` (12 templates, 2-4 blanks), ``8`` (8 templates, 8 blanks) and ``7`` (1 template, 7 blanks:
the CLI's huge-budget check). One JSON object per line:

    {"id": "tbc-1234-include-6", "sentence_id": "tbc-1234", "regime": "include-6", "blanks": 6,
     "template": "... [MASK] ...", "removed": ["word", ...], "include": "word"}

Targets measured (each reported with its figure and met/missed):

- ``include``: every ``include-6`` template under the default (``auto``), ``include=[word]``, ``top=5``,
  ``seed=0``: the share of returned fillings whose filled blanks hold the word as a whole word (>= 95%), and
  the runs that raised (0).
- ``budget``: ``encoder_sequences <= budget`` on every run: ``auto``, ``confident-first``, ``left-to-right`` and
  ``gibbs`` at each ``--budgets`` value (``top=5``, ``seed=0``) on the ``--budget-templates`` templates; ``auto`` at
  its default budget (100 per blank token, as the run reports it) on every single call of the ``include`` and
  ``batch`` targets (with and without ``include``), and in the grid on the templates those did not cover. A
  budget refused with one line of :class:`infill.errors.InfillError` is kept; a run over its budget, any other
  exception, or a refusal of more than one line is a violation.
- ``huge``: ``infill sample "<7-blank template>" --model DEV --budget 1000000000 --top 5 --seed 0`` exits non-zero
  with exactly one line on stderr, or succeeds; peak RSS (GNU time's maximum resident set size of the command,
  or ``ru_maxrss`` of ``os.wait4`` where /usr/bin/time is missing) < 3 GB. The command runs under an address-
  space limit (``--huge-memory-limit-gb``) and a watchdog that kills it above 3 GB resident or after
  ``--huge-timeout`` seconds (then missed, with the reason).
- ``batch``: ``Infiller.sample_many(templates, top=5, seed=0)`` and one ``Infiller.sample(t, top=5, seed=0)`` per
  template give identical texts on the ``--batch-templates`` templates; the same with ``include=[--batch-word]``
  on the ``--include-batch-templates`` templates; and the CLI: ``infill sample -f FILE --seed 0 --top 5 --model
  DEV --json -q`` against one such call per line on the ``--cli-templates`` templates (``--json`` only to split
  the output by template; it does not change the fillings).
- Bad inputs (one clear line each) are not measured here: ``tests/test_bad_inputs.py`` and the CLI tests cover
  them.

Template selections (``--*-templates``) are a count, or ``all``, taken in turn from the regimes (``include-6``,
``2-4``, ``8``, ``7``: a few templates span the blank counts); ``--limit N`` caps every selection, the ``include``
target's 20 too, at ``N`` (a smoke test); a count of 0 skips that part. The ``sample_many`` selection gets a
template or two more where none of its templates share a shape (token length and blanks: what could share a batch),
among those of up to 4 blanks and among those of more; the report lists the shapes shared. The default run checks
``include`` on all 20 templates, ``sample_many`` against ``sample`` on 12 (and one or two more for shared shapes),
with include on 3, through the CLI on 3, and the budget grid on 4 (6, 2-4, 8 and 7 blanks): about 8 minutes on the
2-core development CPU when idle, 15-20 while other jobs share it; ``--all`` takes every template everywhere (about
45 minutes idle). Results go to ``OUT/report.json`` and ``OUT/report.md``, rewritten after every target, so a run
cut short keeps what it measured.

    python3 -m scripts.promises                       # the default run (suite checked against a fresh build)
    python3 -m scripts.promises --all                 # every template for every target (about 45 min idle)
    python3 -m scripts.promises --limit 1 --out /tmp/promises-smoke
    python3 -m scripts.promises --write-suite         # (re)write corpora/promises/heldout.jsonl and exit
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import itertools
import json
import os
import random
import re
import resource
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Callable, Optional

from scripts.harness import CORPORA as CORPUS_DIR
from scripts.harness import CORPUS_FILES, DEV_MODEL, ROOT, environment, log, normalise, sentences, template

SUITE = ROOT / "corpora" / "promises" / "heldout.jsonl"
OUT = ROOT / "eval" / "promises-minilm"
SEED = 38
REGIMES = {"include-6": ((6, 6), 20), "2-4": ((2, 4), 12), "8": ((8, 8), 8), "7": ((7, 7), 1)}
"""Regime -> ((fewest, most) blanks, templates), built in this order."""
COMMON = 100
"""The corpora's most frequent words (by sentences holding them) are not content words: never the include word."""
TARGETS = ("include", "budget", "huge", "batch")
METHODS = ("auto", "confident-first", "left-to-right", "gibbs")
BUDGETS = (50, 150, 300, 600)
TOP, RUN_SEED = 5, 0
AUTO_CHAIN_BLANKS = 4
"""``auto`` runs chains up to this many blanks and one-pass draws above (``infill.pipeline.config``)."""
HUGE_BUDGET = 10**9
GOALS = {"include_share": 0.95, "rss_gb": 3.0}
TARGET_OF = {
    "include": "include",
    "budget grid": "budget",
    "batch": "batch",
    "batch with include": "batch",
    "cli": "batch",
    "huge": "huge",
}
"""Which target each template selection serves."""
DEFAULTS = {"batch": "12", "include_batch": "3", "cli": "3", "budget": "4"}
"""Templates of each selection in the default run, taken in turn from the regimes (``--all``: every template)."""


# ---------------------------------------------------------------- the suite


CALIBRATION_BEFORE = ("2-4", "6-10")
"""The calibration regimes there were when this suite was drawn. The regimes added since hold none of its
sentences (``scripts/calibration_suite.py``), and leaving them out of :func:`used_sentence_ids` keeps the suite
the same when it is written again."""


def used_sentence_ids() -> set[str]:
    """Sentence ids (``corpus-line``) of the calibration suite's first regimes and the DLP Table 3 manifest."""
    used = set()
    for half in ("tune", "check"):
        for line in (ROOT / "corpora" / "calibration" / f"{half}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["regime"] in CALIBRATION_BEFORE:
                used.add(row["id"][: -len(row["regime"]) - 1])
    manifest = ROOT / "corpora" / "dlp-table3.tasks.jsonl"
    if manifest.exists():
        used |= {json.loads(line)["sentence_id"] for line in manifest.read_text(encoding="utf-8").splitlines()}
    return used


def common_words(corpus_dir: Path) -> set[str]:
    """The :data:`COMMON` words in the most sentences of the two corpora (normalised)."""
    df: Counter = Counter()
    for file in CORPUS_FILES.values():
        for line in (corpus_dir / file).read_text(encoding="utf-8").splitlines():
            if line.strip():
                df.update(set(normalise(line).split()))
    return {w for w, _ in sorted(df.items(), key=lambda item: (-item[1], item[0]))[:COMMON]}


def build_suite(tokenizer, corpus_dir: Path = CORPUS_DIR, seed: int = SEED) -> list[dict]:
    """The held-out templates: sentences of 12-30 words not used elsewhere, each used once, regimes in
    :data:`REGIMES`' order; an ``include-6`` template needs a removed word of 3+ letters outside the common
    words (chosen by the seeded generator among those)."""
    rng = random.Random(seed)
    used = used_sentence_ids()
    pool = [(sid, words) for sid, words in sentences(corpus_dir) if sid not in used]
    rng.shuffle(pool)
    common = common_words(corpus_dir)
    rows, taken = [], set()
    for regime, ((low, high), total) in REGIMES.items():
        made_here = 0
        for sid, words in pool:
            if made_here == total:
                break
            if sid in taken:
                continue
            made = template(tokenizer, words, rng.randint(low, high), rng)
            if made is None:
                continue
            row = {
                "id": f"{sid}-{regime}",
                "sentence_id": sid,
                "regime": regime,
                "blanks": len(made[1]),
                "template": made[0],
                "removed": made[1],
            }
            if regime == "include-6":
                content = sorted({w for w in made[1] if len(w) >= 3 and w not in common})
                if not content:
                    continue
                row["include"] = rng.choice(content)
            taken.add(sid)
            rows.append(row)
            made_here += 1
        if made_here < total:
            raise SystemExit(f"only {made_here} sentences for regime {regime}")
    return rows


def suite_text(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def load_tokenizer(model: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model)


# ---------------------------------------------------------------- selections


def select(rows: list[dict], spec: str, regimes: tuple[str, ...], limit: Optional[int]) -> list[dict]:
    """The first ``spec`` (a count, or ``all``) templates of ``regimes`` taken in turn (one of each regime, then
    a second of each...), so that a few templates span the blank counts; at most ``limit``."""
    groups = [[r for r in rows if r["regime"] == regime] for regime in regimes]
    order = [r for tier in itertools.zip_longest(*groups) for r in tier if r is not None]
    count = len(order) if spec == "all" else int(spec)
    return order[: count if limit is None else min(count, limit)]


def shape(tokenizer, row: dict) -> tuple[int, int]:
    """``(tokens, blanks)``: templates of one shape could share a batch of chains."""
    return len(tokenizer(row["template"])["input_ids"]), row["blanks"]


def with_shared_shape(tokenizer, rows: list[dict], picked: list[dict]) -> list[dict]:
    """``picked``, plus templates of ``rows`` so that two share a shape among those of up to 4 blanks (``auto``'s
    chains) and among those of more (its one-pass draws): where none do, the first template sharing a shape
    with a picked one, or failing that the first two of ``rows`` sharing one."""
    if not picked:
        return picked
    picked = list(picked)
    for chains in (True, False):
        group = [r for r in picked if (r["blanks"] <= AUTO_CHAIN_BLANKS) == chains]
        shapes = [shape(tokenizer, r) for r in group]
        if len(set(shapes)) < len(shapes):
            continue
        ids = {r["id"] for r in picked}
        rest = [r for r in rows if r["id"] not in ids and (r["blanks"] <= AUTO_CHAIN_BLANKS) == chains]
        extra = next(([r] for r in rest if shape(tokenizer, r) in shapes), None)
        if extra is None:
            seen: dict = {}
            for row in rest:
                if shape(tokenizer, row) in seen:
                    extra = [seen[shape(tokenizer, row)], row]
                    break
                seen[shape(tokenizer, row)] = row
        picked += extra or []
    return picked


def shape_groups(tokenizer, rows: list[dict]) -> list[str]:
    """The shapes that more than one of ``rows`` share, as ``TOKENS tokens x BLANKS blanks: N``."""
    counts = Counter(shape(tokenizer, r) for r in rows)
    return [f"{t} tokens x {b} blanks: {n}" for (t, b), n in sorted(counts.items()) if n > 1]


# ---------------------------------------------------------------- runs


def holds(word: str, fills: list[str]) -> bool:
    """Whether the filled blanks hold ``word`` as a whole word (case-insensitive)."""
    return re.search(rf"(?<!\w){re.escape(word.lower())}(?!\w)", " ".join(fills).lower()) is not None


def attempt(call: Callable, retries: int = 0, wait: float = 60.0):
    """``(value, None)`` or ``(None, error)``: ``error`` says the exception's type, whether it is an
    ``InfillError``, its message and the last traceback lines. An ``ImportError`` or ``AttributeError`` (the
    package mid-edit) is retried ``retries`` times after ``wait`` seconds."""
    from infill.errors import InfillError

    for left in range(retries, -1, -1):
        try:
            return call(), None
        except Exception as exc:  # noqa: BLE001 (every exception is a measured outcome)
            if left and isinstance(exc, (ImportError, AttributeError)):
                print(f"  {type(exc).__name__}: {exc}; retrying in {wait:.0f}s", file=sys.stderr, flush=True)
                time.sleep(wait)
                continue
            message = str(exc)
            return None, {
                "type": type(exc).__name__,
                "infill_error": isinstance(exc, InfillError),
                "message": message,
                "one_line": "\n" not in message.strip() and bool(message.strip()),
                "traceback": traceback.format_exc().strip().splitlines()[-6:],
            }


def budget_check(result, budget: Optional[int]) -> dict:
    """Encoder sequences against the budget given (or, where None, the one the run reports)."""
    d = result.diagnostics
    limit = budget if budget is not None else d.budget
    return {
        "encoder_sequences": d.encoder_sequences,
        "budget": limit,
        "reported_budget": d.budget,
        "sampler": d.sampler,
        "kept": None if limit is None else d.encoder_sequences <= limit,
    }


def run_include(infiller, rows: list[dict]) -> dict:
    tasks = []
    for k, row in enumerate(rows, 1):
        start = time.perf_counter()
        result, error = attempt(
            lambda: infiller.sample(row["template"], top=TOP, seed=RUN_SEED, include=[row["include"]])
        )
        task = {"id": row["id"], "include": row["include"], "seconds": time.perf_counter() - start}
        if error:
            task["error"] = error
        else:
            task.update(
                texts=result.texts,
                fills=[s.fills for s in result.samples],
                held=[holds(row["include"], s.fills) for s in result.samples],
                **budget_check(result, None),
            )
        tasks.append(task)
        log(
            f"[include {k}/{len(rows)}] {row['id']} {row['include']!r}: "
            + (
                f"ERROR {error['type']}"
                if error
                else f"{sum(task['held'])}/{len(task['held'])} hold it, "
                f"{task['encoder_sequences']}/{task['budget']} seqs"
            )
            + f", {task['seconds']:.1f}s"
        )
    returned = sum(len(t.get("held", [])) for t in tasks)
    held = sum(sum(t.get("held", [])) for t in tasks)
    errors = sum("error" in t for t in tasks)
    share = held / returned if returned else None
    return {
        "templates": len(tasks),
        "returned": returned,
        "held": held,
        "share": share,
        "errors": errors,
        "short": [t["id"] for t in tasks if "held" in t and len(t["held"]) < TOP],
        "met": share is not None and share >= GOALS["include_share"] and errors == 0 and len(tasks) > 0,
        "tasks": tasks,
    }


def run_budget_grid(
    infiller, rows: list[dict], methods: tuple[str, ...], budgets: tuple, covered: set[str]
) -> list[dict]:
    """Every method at every budget on every template, and ``auto`` at its default budget (``None``) where
    ``covered`` (the templates whose single calls already ran it) lacks the template; a named method's default
    has no budget to keep."""
    runs = []
    plan = [
        (row, method, budget)
        for row in rows
        for method in methods
        for budget in budgets + ((None,) if method == "auto" and row["id"] not in covered else ())
    ]
    for row, method, budget in plan:
        start = time.perf_counter()
        options = {} if budget is None else {"budget": budget}
        result, error = attempt(
            lambda: infiller.sample(row["template"], sampler=method, top=TOP, seed=RUN_SEED, **options)
        )
        run = {
            "id": row["id"],
            "blanks": row["blanks"],
            "method": method,
            "given": budget,
            "budget": budget,
            "seconds": time.perf_counter() - start,
        }
        if error:
            run["error"] = error
            run["kept"] = error["infill_error"] and error["one_line"]
            run["refused"] = error["infill_error"]
        else:
            run.update(budget_check(result, budget), returned=len(result.samples))
        runs.append(run)
        state = (
            ("refused" if run.get("refused") else f"ERROR {error['type']}")
            if error
            else f"{run['encoder_sequences']}/{run['budget']}"
        )
        log(
            f"[budget {len(runs)}/{len(plan)}] {row['id']} {method} budget={budget or 'default'}: {state}"
            f"{'' if run['kept'] in (True, None) else ' VIOLATION'}, {run['seconds']:.1f}s"
        )
    return runs


def budget_summary(grid: list[dict], extra: list[dict]) -> dict:
    """Every run with a budget: kept (within it, or refused in one line) or a violation."""
    runs = [r for r in grid + extra if r.get("kept") is not None]
    violations = [r for r in runs if not r["kept"]]
    cells: dict = {}
    for r in grid:
        cell = cells.setdefault(
            f"{r['method']} @ {r['given'] if r['given'] is not None else 'default'}",
            {"runs": 0, "refused": 0, "violations": 0, "max_ratio": None, "errors": 0},
        )
        cell["runs"] += 1
        cell["refused"] += bool(r.get("refused"))
        cell["errors"] += "error" in r and not r.get("refused")
        cell["violations"] += r.get("kept") is False
        if r.get("encoder_sequences") is not None and r.get("budget"):
            ratio = r["encoder_sequences"] / r["budget"]
            cell["max_ratio"] = ratio if cell["max_ratio"] is None else max(cell["max_ratio"], ratio)
    return {
        "runs": len(runs),
        "grid_runs": len(grid),
        "default_runs": sum(r.get("kept") is not None for r in extra),
        "refused": sum(bool(r.get("refused")) for r in runs),
        "violations": len(violations),
        "templates": sorted({r["id"] for r in runs}),
        "met": bool(runs) and not violations,
        "cells": cells,
        "violation_runs": violations,
    }


def texts_or_error(result, error) -> dict:
    if error:
        return {"error": error}
    return {"texts": result.texts, **budget_check(result, None)}


def run_api_batch(infiller, rows: list[dict], label: str, **options) -> dict:
    templates = [r["template"] for r in rows]
    start = time.perf_counter()
    batched, error = attempt(lambda: infiller.sample_many(templates, top=TOP, seed=RUN_SEED, **options))
    log(
        f"[{label}] sample_many of {len(rows)}: {'ERROR ' + error['type'] if error else 'done'}, "
        f"{time.perf_counter() - start:.1f}s"
    )
    pairs = []
    for k, row in enumerate(rows):
        start = time.perf_counter()
        single, single_error = attempt(lambda: infiller.sample(row["template"], top=TOP, seed=RUN_SEED, **options))
        pair = {
            "id": row["id"],
            "blanks": row["blanks"],
            "seconds": time.perf_counter() - start,
            "single": texts_or_error(single, single_error),
            "batched": {"error": error} if error else texts_or_error(batched[k], None),
        }
        pair["identical"] = identical(pair)
        pairs.append(pair)
        log(
            f"[{label} {k + 1}/{len(rows)}] {row['id']}: "
            f"{'identical' if pair['identical'] else 'DIFFERENT' if 'texts' in pair['single'] else 'ERROR'}, "
            f"{pair['seconds']:.1f}s"
        )
    return summarise_pairs(pairs, batch_error=error)


def summarise_pairs(pairs: list[dict], batch_error=None) -> dict:
    errors = sum("error" in p["single"] or "error" in p["batched"] for p in pairs)
    same = sum(p["identical"] for p in pairs)
    return {
        "templates": len(pairs),
        "identical": same,
        "errors": errors,
        "batch_error": batch_error,
        "met": bool(pairs) and same == len(pairs),
        "pairs": pairs,
    }


def infill_command() -> list[str]:
    script = Path(sys.executable).parent / "infill"
    return [str(script)] if script.exists() else [sys.executable, "-m", "infill"]


def child_env() -> dict:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "2")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    return env


def parse_cli_json(stdout: str) -> list[list[str]]:
    """The texts per template of ``infill sample --json``: sample objects, then one diagnostics object each."""
    out, current = [], []
    for line in stdout.splitlines():
        record = json.loads(line)
        if "diagnostics" in record:
            out.append(current)
            current = []
        else:
            current.append(record["text"])
    return out


def run_cli_batch(rows: list[dict], model: str) -> dict:
    base = [*infill_command(), "sample", "--seed", str(RUN_SEED), "--top", str(TOP), "--model", model, "--json", "-q"]
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "templates.txt"
        file.write_text("".join(r["template"] + "\n" for r in rows), encoding="utf-8")
        start = time.perf_counter()
        whole = subprocess.run([*base[:2], "-f", str(file), *base[2:]], capture_output=True, text=True, env=child_env())
        log(f"[cli] -f with {len(rows)} lines: rc {whole.returncode}, {time.perf_counter() - start:.1f}s")
    batched = None
    if whole.returncode == 0:
        try:
            batched = parse_cli_json(whole.stdout)
        except (json.JSONDecodeError, KeyError):
            batched = None
    pairs = []
    for k, row in enumerate(rows):
        start = time.perf_counter()
        one = subprocess.run([*base[:2], row["template"], *base[2:]], capture_output=True, text=True, env=child_env())
        single = None
        if one.returncode == 0:
            try:
                single = parse_cli_json(one.stdout)
            except (json.JSONDecodeError, KeyError):
                single = None
        pair = {
            "id": row["id"],
            "blanks": row["blanks"],
            "seconds": time.perf_counter() - start,
            "single": {"texts": single[0]}
            if single and len(single) == 1
            else {"error": {"returncode": one.returncode, "stderr": one.stderr.strip().splitlines()[-3:]}},
            "batched": {"texts": batched[k]}
            if batched is not None and len(batched) == len(rows)
            else {"error": {"returncode": whole.returncode, "stderr": whole.stderr.strip().splitlines()[-3:]}},
        }
        pair["identical"] = identical(pair)
        pairs.append(pair)
        log(
            f"[cli {k + 1}/{len(rows)}] {row['id']}: {'identical' if pair['identical'] else 'DIFFERENT/ERROR'}, "
            f"{pair['seconds']:.1f}s"
        )
    return summarise_pairs(pairs)


# ---------------------------------------------------------------- the huge budget, through the CLI


def rss_of_tree(pid: int) -> int:
    """Resident kB of ``pid`` and its descendants (0 where gone)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            total += int(status.split("VmRSS:")[1].split()[0]) if "VmRSS:" in status else 0
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


def run_huge(row: dict, model: str, timeout: float, memory_limit_gb: float) -> dict:
    command = [
        *infill_command(),
        "sample",
        row["template"],
        "--model",
        model,
        "--budget",
        str(HUGE_BUDGET),
        "--top",
        str(TOP),
        "--seed",
        str(RUN_SEED),
    ]
    gnu_time = "/usr/bin/time" if Path("/usr/bin/time").exists() else None
    cap_kb = int(GOALS["rss_gb"] * 2**20)
    limit_bytes = int(memory_limit_gb * 2**30)

    def limits():
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    with tempfile.TemporaryDirectory() as tmp:
        rss_file, out_file, err_file = Path(tmp) / "rss", Path(tmp) / "out", Path(tmp) / "err"
        full = ([gnu_time, "-f", "%M", "-o", str(rss_file)] if gnu_time else []) + command
        start = time.perf_counter()
        watched_kb, killed = 0, None
        with open(out_file, "w") as out, open(err_file, "w") as err:
            process = subprocess.Popen(full, stdout=out, stderr=err, env=child_env(), preexec_fn=limits)
            while True:
                waited, status, usage = os.wait4(process.pid, os.WNOHANG)
                if waited:
                    break
                watched_kb = max(watched_kb, rss_of_tree(process.pid))
                elapsed = time.perf_counter() - start
                if killed is None and (watched_kb > cap_kb or elapsed > timeout):
                    killed = (
                        f"resident {watched_kb / 2**20:.2f} GB > {GOALS['rss_gb']} GB"
                        if watched_kb > cap_kb
                        else f"still running after {timeout:.0f}s"
                    )
                    os.killpg(process.pid, signal.SIGKILL)
                time.sleep(0.05)
            process.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        stderr_lines = [line for line in err_file.read_text(errors="replace").splitlines()]
        stdout_lines = out_file.read_text(errors="replace").splitlines()
        peak_kb, source = None, None
        if gnu_time and rss_file.exists():
            numbers = [line for line in rss_file.read_text().splitlines() if line.strip().isdigit()]
            if numbers:
                peak_kb, source = int(numbers[-1]), "GNU time %M"
        if peak_kb is None:
            peak_kb, source = usage.ru_maxrss, "os.wait4 ru_maxrss (includes this process' own high-water mark)"
    peak_kb = max(peak_kb, watched_kb)
    rc = process.returncode
    refused = rc != 0 and killed is None and len(stderr_lines) == 1
    succeeded = rc == 0 and killed is None
    rss_gb = peak_kb / 2**20
    met = (refused or succeeded) and rss_gb < GOALS["rss_gb"]
    return {
        "command": shlex.join(command),
        "returncode": rc,
        "killed": killed,
        "seconds": seconds,
        "stderr_lines": len(stderr_lines),
        "stderr": stderr_lines[-8:],
        "stdout_lines": len(stdout_lines),
        "stdout": stdout_lines[:TOP],
        "peak_rss_gb": rss_gb,
        "rss_source": source,
        "address_space_limit_gb": memory_limit_gb,
        "outcome": "refused in one line"
        if refused
        else "succeeded"
        if succeeded
        else "killed: " + killed
        if killed
        else f"exit {rc} with {len(stderr_lines)} lines on stderr",
        "met": met,
    }


# ---------------------------------------------------------------- the report


def signature(args, threads: int) -> dict:
    """The run's environment (``harness.environment``), its date, command, model and suite."""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        **environment(torch_threads=threads),
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "model": args.model,
        "suite": str(args.suite.relative_to(ROOT) if args.suite.is_relative_to(ROOT) else args.suite),
        "suite_sha256": hashlib.sha256(args.suite.read_bytes()).hexdigest(),
    }


def identical(pair: dict) -> bool:
    """Whether a pair's single and batched runs both gave texts, the same."""
    return (
        "texts" in pair["single"] and "texts" in pair["batched"] and pair["single"]["texts"] == pair["batched"]["texts"]
    )


def mark(met: Optional[bool]) -> str:
    return "see tests" if met is None else "met" if met else "**missed**"


def _measured(key: str, part: dict) -> str:
    """What the report says was measured for the target ``key``."""
    if key == "include":
        share = "-" if part["share"] is None else f"{100 * part['share']:.1f}%"
        return (
            f"{share} ({part['held']} of {part['returned']} fillings, {part['templates']} templates); "
            f"{part['errors']} errors"
        )
    if key == "budget":
        return (
            f"{part['violations']} violations in {part['runs']} runs on {len(part['templates'])} templates "
            f"({part['refused']} refused)"
        )
    if key == "huge":
        return f"{part['outcome']}; peak RSS {part['peak_rss_gb']:.2f} GB; {part['seconds']:.0f}s"
    raised = ", batched call raised" if part.get("batch_error") else ""
    return f"{part['identical']} of {part['templates']} identical ({part['errors']} with errors{raised})"


TARGET_ROWS = {
    "include": (
        "held-out include under the default (6 blanks, top 5)",
        ">= 95% of returned fillings hold the word; 0 errors",
    ),
    "budget": (
        "encoder_sequences <= budget",
        "every run within its budget, or refused by one InfillError line",
    ),
    "huge": (
        "--budget 10^9 through the CLI (7 blanks)",
        "one stderr line and non-zero exit, or success; peak RSS < 3 GB",
    ),
    "batch_api": ("sample_many == sample, same seed", "identical texts on every template"),
    "batch_include": ("sample_many == sample with include", "identical texts on every template"),
    "batch_cli": ("infill sample -f FILE == one call per line", "identical texts on every template"),
}
"""Each measured target's name and goal, in the report's order."""


def target_rows(results: dict) -> list[tuple[str, str, str, Optional[bool]]]:
    """``(target, goal, measured, met)`` per target measured."""
    rows = [(*TARGET_ROWS[k], _measured(k, results[k]), results[k]["met"]) for k in TARGET_ROWS if results.get(k)]
    rows.append(
        (
            "bad inputs give one clear line",
            "every case of the existing suites",
            "not measured here: tests/test_bad_inputs.py and the CLI tests",
            None,
        )
    )
    return rows


def write_report(out: Path, env: dict, settings: dict, results: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rows = target_rows(results)
    report = {
        "environment": env,
        "settings": settings,
        "targets": [{"target": t, "goal": g, "measured": m, "met": ok} for t, g, m, ok in rows],
        "results": results,
    }
    (out / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    lines = [
        "# The default keeps every promise",
        "",
        f"Written by `python -m scripts.promises` on {env['date']}: `{env['command']}`.",
        "",
        f"- Machine: {env['cpu']}, {env['cores']} cores, torch threads {env['torch_threads']}, CPU only",
        f"- Versions: Python {env['python']}, torch {env['torch']}, transformers {env['transformers']}, "
        f"infill-mcmc {env['infill-mcmc']}; git {env['commit']}",
        f"- Model: `{env['model']}`; suite: `{env['suite']}` (sha256 {env['suite_sha256'][:12]}); "
        f"top {TOP}, seed {RUN_SEED}",
        f"- Templates per target: {settings['counts']}",
        "",
        "| target | goal | measured | |",
        "|---|---|---|---|",
    ]
    lines += [f"| {t} | {g} | {m} | {mark(ok)} |" for t, g, m, ok in rows]
    inc = results.get("include")
    if inc:
        misses = [t for t in inc["tasks"] if "error" in t or not all(t["held"])]
        lines += [
            "",
            "## Include",
            "",
            f"Fillings without the word, or errors: {len(misses)} of {inc['templates']} "
            f"templates" + (":" if misses else "."),
        ]
        for t in misses[:20]:
            lines.append(
                f"- `{t['id']}` (`{t['include']}`): "
                + (
                    f"{t['error']['type']}: {t['error']['message'][:200]!r}"
                    if "error" in t
                    else f"{len(t['held']) - sum(t['held'])} of {len(t['held'])} lack it, e.g. "
                    f'"{next(x for x, h in zip(t["texts"], t["held"]) if not h)}"'
                )
            )
        if inc["short"]:
            lines.append(f"- fewer than {TOP} fillings returned: {', '.join(inc['short'])}")
    bud = results.get("budget")
    if bud:
        lines += [
            "",
            "## Budget",
            "",
            f"Grid: {settings['methods']} x budgets {settings['budgets']} on "
            f"{settings['counts'].get('budget grid', 0)} templates; plus `auto` at its default budget on "
            f"every single call of the batch and include targets ({bud['default_runs']} runs). A cell's ratio "
            "is the largest encoder_sequences / budget among the runs that returned.",
            "",
            "| method @ budget | runs | refused | errors | violations | max seqs / budget |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {name} | {c['runs']} | {c['refused']} | {c['errors']} | {c['violations']} | "
            f"{'-' if c['max_ratio'] is None else format(c['max_ratio'], '.2f')} |"
            for name, c in bud["cells"].items()
        ]
        if bud["violation_runs"]:
            lines += ["", "Violations:"]
            for r in bud["violation_runs"][:30]:
                limit = r["budget"] if r.get("budget") is not None else r.get("reported_budget")
                lines.append(
                    f"- `{r['id']}` {r['method']} budget {limit}: "
                    + (
                        f"{r['error']['type']}: {r['error']['message'][:160]!r}"
                        if "error" in r
                        else f"{r['encoder_sequences']} sequences"
                    )
                )
    huge = results.get("huge")
    if huge:
        lines += [
            "",
            "## Budget 10^9",
            "",
            f"`{huge['command']}`",
            "",
            f"Exit {huge['returncode']}, {huge['stderr_lines']} stderr lines, peak RSS {huge['peak_rss_gb']:.2f} "
            f"GB ({huge['rss_source']}; address space capped at {huge['address_space_limit_gb']:g} GB), "
            f"{huge['seconds']:.1f}s. Stderr (last lines):",
            "",
            "```",
            *huge["stderr"],
            "```",
        ]
    for key, name in (
        ("batch_api", "Batched == single (API)"),
        ("batch_include", "Batched == single, include"),
        ("batch_cli", "Batched == single (CLI)"),
    ):
        part = results.get(key)
        if part:
            shared = settings.get("batch_shared_shapes") if key == "batch_api" else None
            lines += [
                "",
                f"## {name}",
                "",
                f"{part['identical']} of {part['templates']} identical."
                + (f" Shapes shared in the batch: {'; '.join(shared)}." if shared else ""),
            ]
            for p in [p for p in part["pairs"] if not p["identical"]][:10]:
                if "texts" in p["single"] and "texts" in p["batched"]:
                    one, many = p["single"]["texts"], p["batched"]["texts"]
                    k = next((i for i, (a, b) in enumerate(zip(one, many)) if a != b), min(len(one), len(many)))
                    lines.append(
                        f"- `{p['id']}`: {len(one)} vs {len(many)} texts; the first difference, text {k + 1}: "
                        f"single {one[k] if k < len(one) else None!r}, "
                        f"batched {many[k] if k < len(many) else None!r}"
                    )
                else:
                    side = "single" if "error" in p["single"] else "batched"
                    error = p[side]["error"]
                    detail = f"{error['type']}: {error['message'][:200]!r}" if "type" in error else str(error)[:200]
                    lines.append(f"- `{p['id']}`: the {side} call failed: {detail}")
    lines += ["", "## Settings", "", "```json", json.dumps(settings, indent=1), "```", ""]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=str(DEV_MODEL))
    parser.add_argument("--suite", type=Path, default=SUITE)
    parser.add_argument("--corpora", type=Path, default=CORPUS_DIR)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--write-suite", action="store_true", help="(re)build the suite from the corpora and exit")
    parser.add_argument("--targets", default=",".join(TARGETS), help=f"comma-separated, of {', '.join(TARGETS)}")
    parser.add_argument("--methods", default=",".join(METHODS), help="the budget grid's methods")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="the budget grid's budgets")
    parser.add_argument(
        "--budget-templates",
        default=DEFAULTS["budget"],
        metavar="N|all",
        help="budget grid: templates, taken in turn from the regimes, or all (default %(default)s)",
    )
    for flag, key, what in (
        ("--batch-templates", "batch", "sample_many vs sample"),
        ("--include-batch-templates", "include_batch", "the same with include"),
        ("--cli-templates", "cli", "infill sample -f vs one call per line"),
    ):
        parser.add_argument(
            flag, default=DEFAULTS[key], metavar="N|all", help=f"{what}: templates (default %(default)s)"
        )
    parser.add_argument("--batch-word", default="the", help="the include word of that comparison")
    parser.add_argument("--all", action="store_true", help="every template for every selection")
    parser.add_argument(
        "--limit", type=int, help="at most N templates in every selection, the include target's too (a smoke test)"
    )
    parser.add_argument(
        "--huge-timeout", type=float, default=300.0, help="seconds before the 10^9-budget run is killed"
    )
    parser.add_argument("--huge-memory-limit-gb", type=float, default=8.0, help="its address-space limit, a safety net")
    parser.add_argument("--retries", type=int, default=2, help="retries, a minute apart, of loading the model mid-edit")
    args = parser.parse_args()
    args.suite = args.suite.resolve()

    if args.write_suite:
        rows = build_suite(load_tokenizer(args.model), args.corpora)
        args.suite.parent.mkdir(parents=True, exist_ok=True)
        args.suite.write_text(suite_text(rows), encoding="utf-8")
        print(f"{args.suite}: {len(rows)} templates ({dict(Counter(r['regime'] for r in rows))})")
        return
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = set(targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown target {sorted(unknown)[0]!r}; choose from {', '.join(TARGETS)}")
    if args.all:
        args.budget_templates = args.batch_templates = args.include_batch_templates = args.cli_templates = "all"
    for name in ("budget_templates", "batch_templates", "include_batch_templates", "cli_templates"):
        value = getattr(args, name)
        if value != "all" and not (value.isdigit()):
            parser.error(f"--{name.replace('_', '-')} takes a count or all, got {value!r}")
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    budgets = tuple(int(b) for b in args.budgets.split(",") if b.strip())

    rows = [json.loads(line) for line in args.suite.read_text(encoding="utf-8").splitlines() if line.strip()]
    tokenizer = load_tokenizer(args.model)
    fresh = suite_text(build_suite(tokenizer, args.corpora))
    suite_reproduced = fresh == args.suite.read_text(encoding="utf-8")
    if not suite_reproduced:
        log(f"warning: {args.suite} differs from a fresh build (python3 -m scripts.promises --write-suite)")

    import torch

    torch.set_num_threads(2)
    from infill import Infiller

    log(f"loading {args.model}")
    infiller, error = attempt(lambda: Infiller(args.model), retries=args.retries)
    if error:
        raise SystemExit(f"cannot load the model: {error['type']}: {error['message']}")

    everyone = tuple(REGIMES)
    picks = {
        "include": select(rows, "all", ("include-6",), args.limit),
        "budget grid": select(rows, args.budget_templates, everyone, args.limit),
        "batch": with_shared_shape(tokenizer, rows, select(rows, args.batch_templates, everyone, args.limit)),
        "batch with include": select(rows, args.include_batch_templates, everyone, args.limit),
        "cli": select(rows, args.cli_templates, everyone, args.limit),
        "huge": [r for r in rows if r["regime"] == "7"][:1],
    }
    settings = {
        "targets": targets,
        "methods": list(methods),
        "budgets": list(budgets),
        "budget_templates": args.budget_templates,
        "batch_templates": args.batch_templates,
        "include_batch_templates": args.include_batch_templates,
        "cli_templates": args.cli_templates,
        "batch_word": args.batch_word,
        "limit": args.limit,
        "huge_timeout": args.huge_timeout,
        "suite_reproduced": suite_reproduced,
        "counts": {k: len(v) for k, v in picks.items() if TARGET_OF[k] in targets},
        "selected": {k: [r["id"] for r in v] for k, v in picks.items()},
        "batch_shared_shapes": shape_groups(tokenizer, picks["batch"]),
    }
    env = signature(args, torch.get_num_threads())
    results: dict = {}
    seconds = settings["target_seconds"] = {}
    started = time.perf_counter()
    default_runs: list[dict] = []  # auto at its default budget: the single calls of include and batch

    def timed(name: str, call: Callable):
        begin = time.perf_counter()
        value = call()
        seconds[name] = round(time.perf_counter() - begin, 1)
        return value

    def singles(label: str, tasks: list[dict]) -> list[dict]:
        return [
            {
                "id": t["id"],
                "method": label,
                "budget": None,
                "kept": t["kept"],
                "encoder_sequences": t["encoder_sequences"],
                "reported_budget": t.get("reported_budget"),
            }
            for t in tasks
            if t.get("kept") is not None
        ]

    if "huge" in targets and picks["huge"]:
        log("[huge] running the 10^9-budget command")
        results["huge"] = timed(
            "huge", lambda: run_huge(picks["huge"][0], args.model, args.huge_timeout, args.huge_memory_limit_gb)
        )
        log(f"[huge] {results['huge']['outcome']}, peak RSS {results['huge']['peak_rss_gb']:.2f} GB")
        write_report(args.out, env, settings, results)
    if "include" in targets and picks["include"]:
        results["include"] = timed("include", lambda: run_include(infiller, picks["include"]))
        default_runs += singles("auto +include", results["include"]["tasks"])
        write_report(args.out, env, settings, results)
    if "batch" in targets and picks["batch"]:
        results["batch_api"] = timed("batch_api", lambda: run_api_batch(infiller, picks["batch"], "batch"))
        default_runs += singles("auto", [{"id": p["id"], **p["single"]} for p in results["batch_api"]["pairs"]])
        write_report(args.out, env, settings, results)
    if "batch" in targets and picks["batch with include"]:
        results["batch_include"] = timed(
            "batch_include",
            lambda: run_api_batch(infiller, picks["batch with include"], "batch+include", include=[args.batch_word]),
        )
        default_runs += singles(
            f"auto +include {args.batch_word}",
            [{"id": p["id"], **p["single"]} for p in results["batch_include"]["pairs"]],
        )
        write_report(args.out, env, settings, results)
    if "batch" in targets and picks["cli"]:
        results["batch_cli"] = timed("batch_cli", lambda: run_cli_batch(picks["cli"], args.model))
        write_report(args.out, env, settings, results)
    if "budget" in targets:
        covered = {r["id"] for r in default_runs if r["method"] == "auto"}
        grid = timed("budget_grid", lambda: run_budget_grid(infiller, picks["budget grid"], methods, budgets, covered))
        results["budget"] = budget_summary(grid, default_runs)
        results["budget"]["grid"] = grid
        write_report(args.out, env, settings, results)
    settings["seconds"] = round(time.perf_counter() - started, 1)
    write_report(args.out, env, settings, results)
    for target, goal, measured, met in target_rows(results):
        print(f"{mark(met):>10}  {target}: {measured}")
    print(f"{args.out / 'report.md'} ({settings['seconds']:.0f}s)")


if __name__ == "__main__":
    main()
