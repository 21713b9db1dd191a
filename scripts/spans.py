"""Benchmark of blanks of any length: ``[MASK*?]`` against fixed lengths and baselines.

    nice python -m scripts.spans [--model ../shared/models/infill-dev-minilm-mlm] [--tasks 200] [--seed 0]
                                 [--full-every 1] [--out eval/spans-minilm] [--shard I/N] [--report-only]

Tasks: sentences of the odd-numbered lines of ``wiki103.5k.txt`` (the even ones calibrated the span energy,
``eval/spans-calibration/spans-calibration.md``), 8-20 words, ``1..4`` consecutive words (uniformly many; letters and digits only,
any pieces) replaced by ``[MASK*?]``; the list is written to ``tasks.jsonl``. Per task every row runs in turn
(the order rotated per task; the machine is shared, so only per-task comparisons mean much), with the same seed,
and the task's results are appended to ``results.jsonl`` at once: a rerun resumes after the tasks done, and
``report.md`` and ``spans.png`` are written from whatever tasks are there. Rows:

- ``default``: ``Infiller.sample(template, top=5)``, the span sampler's defaults for ``[MASK*?]``;
- ``l2r-reranked``: left-to-right draws of the masked LM at every length 1-4 (one-piece words, lengths
  interleaved), distinct ones scored by the default's span energy, the best 5 kept, as many as ``default``'s
  encoder sequences of the same task allow;
- ``mask-predict``: the same draws, the best 5 by the mean log-probability per token of the fill (its PLL
  over the fill tokens alone, divided by their number): Mask-Predict's length rule;
- ``oracle``: token blanks of the removed span's true number of tokens, ``[MASK*t]`` with ``blank_unit="token"``
  (today's default sampler), an upper bound on knowing the length;
- ``fixed-1``, ``fixed-2``: word blanks ``[MASK*1-1]``, ``[MASK*2-2]``;
- ``per-length``: ``span_method="per-length"`` with 6 chains at each of the 4 lengths (24 chains, the default's
  25 at about equal compute);
- ``token-1``: on one-word spans whose word takes several tokens, ``[MASK]`` with ``blank_unit="token"``
  (on one-token words it is ``oracle``): with ``fixed-1`` (``[MASK]`` as a word blank is ``[MASK*1-1]``) it
  decides whether ``[MASK]`` becomes a word blank by default.

``--full-every N`` runs ``fixed-2`` and ``per-length`` (and ``fixed-1`` beyond one-word spans) on every N-th task
only, for a CPU that cannot run them all.

Metrics: a filling's length is its number of whitespace words. Exact-length rate and mean |length error| of
the top filling; recovery@5: the share of tasks where one of the (at most) 5 fillings equals the removed words
(lowercased, whitespace-normalised); word recall@5: per task, the largest share of the removed words (as a
multiset) that one of the 5 fillings contains, averaged; BLEU: unsmoothed 4-gram BLEU of each filled sentence
against the original (lowercased), averaged over the 5 and the tasks; energy: every row's fills (their text
tokenized again) scored by one common energy, the default span energy of the ``[MASK*?]`` template (its name is
in each result line), the mean over the 5; sentence PLL-word-l2r: the same for PLL-word-l2r of the whole filled
sentence, a second common measure; self-BLEU of the 5 filled sentences; seconds and encoder sequences of the run.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import torch

from scripts.harness import versions as harness_versions

KEYS = ("exact", "error", "recovered", "recall", "bleu", "energy", "sentence", "self_bleu", "seconds", "sequences")
ROWS = ("default", "l2r-reranked", "mask-predict", "oracle", "fixed-1", "fixed-2", "per-length", "token-1")
WORD = re.compile(r"^[A-Za-z0-9]+$")
TOP = 5
PER_LENGTH_CHAINS = 6
DRAWS_PER_LENGTH = 8  # left-to-right draws per length and round
SENTENCE = "word-l2r"  # a second common energy: PLL-word-l2r of the whole filled sentence
TARGETS = {
    "exact_over_best_fixed": 0.10,
    "max_length_error": 0.7,
    "recovery_over_oracle": 0.9,
    "energy_win_share": 0.6,
    "seconds_over_token": 3.0,
    "word_over_token_seconds": 2.0,
}


def removable(words: list[str], rng: random.Random) -> tuple[int, int] | None:
    """``(start, n)`` of a run of ``n`` (uniform in 1..4) words of letters and digits in ``words``, or None."""
    n = rng.randint(1, 4)
    starts = [i for i in range(len(words) - n + 1) if all(WORD.match(w) for w in words[i : i + n])]
    return (rng.choice(starts), n) if starts else None


def make_tasks(corpus: Path, count: int, seed: int) -> list[dict]:
    """``count`` span tasks from the odd-numbered lines of ``corpus`` (see the module docstring)."""
    lines = corpus.read_text(encoding="utf-8").splitlines()[1::2]
    usable = [
        line.split() for line in lines if "@" not in line and "<unk>" not in line and 8 <= len(line.split()) <= 20
    ]
    rng = random.Random(seed)
    tasks = []
    for words in rng.sample(usable, len(usable)):
        span = removable(words, rng)
        if span is not None:
            i, n = span
            tasks.append(
                {
                    "task": len(tasks),
                    "original": " ".join(words),
                    "removed": " ".join(words[i : i + n]),
                    "words": n,
                    "before": " ".join(words[:i]),
                    "after": " ".join(words[i + n :]),
                }
            )
        if len(tasks) == count:
            return tasks
    raise SystemExit(f"only {len(tasks)} tasks in {corpus}")


def template(task: dict, blank: str) -> str:
    return " ".join(p for p in (task["before"], blank, task["after"]) if p)


def outcome(texts: list[str], fills: list[str], energies: list[float], seconds: float, sequences: int) -> dict:
    return {"texts": texts, "fills": fills, "energies": energies, "seconds": seconds, "sequences": sequences}


def sampled(infiller, text: str, seed: int, **options) -> dict:
    """A run of the pipeline, top 5."""
    begin = time.perf_counter()
    result = infiller.sample(text, top=TOP, seed=seed, **options)
    seconds = time.perf_counter() - begin
    return outcome(
        [s.text for s in result.samples],
        [s.fills[0] for s in result.samples],
        [s.energy for s in result.samples],
        seconds,
        result.diagnostics.encoder_sequences,
    )


def drawn(infiller, text: str, seed: int, budget: int) -> tuple[dict, dict]:
    """``l2r-reranked`` and ``mask-predict`` (module docstring): rounds of left-to-right draws at every length
    while the draws and the span energy of the distinct new ones fit in ``budget`` encoder sequences. The
    draws' seconds and sequences count for both rows, the span energy's for ``l2r-reranked`` only."""
    from infill.pipeline.config import RunConfig
    from infill.spans.fills import Fills
    from infill.spans.sample import draw_starts, span_energy, span_space
    from infill.text.template import fill_pieces

    begin = time.perf_counter()
    tokenizer = infiller.tokenizer
    prepared = infiller.prepare([text], RunConfig.create(top=TOP, seed=seed))
    tpl, categories = prepared.templates[0], prepared.pieces
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.arange(1, 5).repeat(DRAWS_PER_LENGTH)[:, None]
    space = span_space(tpl, tokenizer, categories, len(lengths))
    energy = span_energy(infiller.model, tokenizer, tpl, categories, space)
    seen, kept, scores, draw_seconds, draws = set(), [], [], 0.0, 0
    with torch.no_grad():
        while energy.encoder_sequences + int(lengths.sum()) <= budget:
            drawing, before = time.perf_counter(), energy.encoder_sequences
            fills = draw_starts(energy, space, lengths, "left-to-right", generator)
            draw_seconds += time.perf_counter() - drawing
            draws += energy.encoder_sequences - before
            new = []
            for b, chain in enumerate(fills.to_lists()):
                if repr(chain) not in seen:
                    seen.add(repr(chain))
                    new.append(b)
            copies = energy.layout(fills.select(torch.tensor(new, dtype=torch.long)))[2].sum(1).tolist()
            room, fit = budget - energy.encoder_sequences, 0
            while fit < len(new) and copies[fit] <= room:
                room -= copies[fit]
                fit += 1
            if fit:
                chosen = fills.select(torch.tensor(new[:fit], dtype=torch.long))
                kept.append(chosen)
                scores += energy(chosen).tolist()
            if fit < len(new):
                break
    rerank_seconds = time.perf_counter() - begin
    pool = Fills(torch.cat([f.tokens for f in kept]), torch.cat([f.lengths for f in kept]))
    pieces = [[categories[f].tolist() for f in chain] for chain in pool.to_lists()]
    sequences = energy.encoder_sequences
    begin = time.perf_counter()
    with torch.no_grad():
        fill_only = span_energy(infiller.model, tokenizer, tpl, categories, space, window=0, scoring="pll")
        per_token = (fill_only(pool) / torch.tensor([len(p[0]) for p in pieces])).tolist()
    predict_seconds = time.perf_counter() - begin

    def best(values: list[float]) -> tuple[list[str], list[str], list[float]]:
        order = sorted(range(len(values)), key=lambda i: -values[i])[:TOP]
        spliced = [fill_pieces(tpl, tokenizer, pieces[i]) for i in order]
        return [s[0] for s in spliced], [s[1][0] for s in spliced], [values[i] for i in order]

    return (
        outcome(*best(scores), rerank_seconds, sequences),
        outcome(*best(per_token), draw_seconds + predict_seconds, draws + fill_only.encoder_sequences),
    )


def run_task(infiller, task: dict, seed: int, full_every: int = 1) -> dict:
    """Every row on ``task``, in an order rotated by the task's index (``l2r-reranked`` and ``mask-predict``
    right after ``default``, whose encoder sequences they take), then the common energy of each row's filled
    sentences. ``fixed-2`` and ``per-length`` run on every ``full_every``-th task only, ``fixed-1`` on those and
    on every one-word span (it decides the default)."""
    tokens = len(infiller.tokenizer(task["removed"], add_special_tokens=False)["input_ids"])
    wildcard = template(task, "[MASK*?]")
    full = task["task"] % full_every == 0
    runs = {
        "default": lambda: sampled(infiller, wildcard, seed),
        "oracle": lambda: sampled(infiller, template(task, f"[MASK*{tokens}]"), seed, blank_unit="token"),
    }
    if full or task["words"] == 1:
        runs["fixed-1"] = lambda: sampled(infiller, template(task, "[MASK*1-1]"), seed)
    if full:
        runs["fixed-2"] = lambda: sampled(infiller, template(task, "[MASK*2-2]"), seed)
        runs["per-length"] = lambda: sampled(
            infiller, wildcard, seed, span_method="per-length", num_samples=PER_LENGTH_CHAINS
        )
    if task["words"] == 1 and tokens > 1:
        runs["token-1"] = lambda: sampled(infiller, template(task, "[MASK]"), seed, blank_unit="token")
    names = list(runs)
    shift = task["task"] % len(names)
    rows = {}
    for name in names[shift:] + names[:shift]:
        rows[name] = runs[name]()
        if name == "default":
            rows["l2r-reranked"], rows["mask-predict"] = drawn(infiller, wildcard, seed, rows[name]["sequences"])
    name = common_energy(infiller, wildcard, rows)
    for row in rows.values():
        row["sentence"] = [s.total for s in infiller.score(row["texts"], SENTENCE)]
    return {**task, "tokens": tokens, "seed": seed, "energy": name, "rows": rows}


def common_energy(infiller, wildcard: str, rows: dict) -> str:
    """Every row's fills scored by the default span energy of ``wildcard`` (each fill's text tokenized again),
    into ``row["common"]``; returns the energy's name."""
    from infill.spans.fills import EMPTY, Fills
    from infill.spans.sample import span_energy, span_space
    from infill.text.template import parse

    tokenizer = infiller.tokenizer
    ids = [tokenizer(f, add_special_tokens=False)["input_ids"] for row in rows.values() for f in row["fills"]]
    vocab = sorted({i for fill in ids for i in fill})
    index = {v: k for k, v in enumerate(vocab)}
    tokens = torch.full((len(ids), 1, max(map(len, ids))), EMPTY, dtype=torch.long)
    for b, fill in enumerate(ids):
        tokens[b, 0, : len(fill)] = torch.tensor([index[i] for i in fill])
    tpl, categories = parse(wildcard, tokenizer, infiller.max_length), torch.tensor(vocab)
    energy = span_energy(infiller.model, tokenizer, tpl, categories, span_space(tpl, tokenizer, categories, len(ids)))
    with torch.no_grad():
        values = iter(energy(Fills(tokens, torch.tensor([[len(f)] for f in ids]))).tolist())
    for row in rows.values():
        row["common"] = [next(values) for _ in row["fills"]]
    return energy.name


# ---------------------------------------------------------------- metrics


def normal(text: str) -> list[str]:
    return text.lower().split()


def sentence_bleu(hypothesis: str, reference: str) -> float:
    from infill.metrics import corpus_bleu

    return corpus_bleu([normal(hypothesis)], [normal(reference)])


def row_metrics(task: dict, row: dict) -> dict:
    """The per-task metrics of one row (module docstring)."""
    from infill.metrics import self_bleu

    removed = normal(task["removed"])
    chosen = len(row["fills"][0].split())
    overlap = max(sum((Counter(normal(f)) & Counter(removed)).values()) for f in row["fills"])
    return {
        "length": chosen,
        "exact": chosen == task["words"],
        "error": abs(chosen - task["words"]),
        "recovered": any(normal(f) == removed for f in row["fills"]),
        "recall": overlap / len(removed),
        "bleu": statistics.mean(sentence_bleu(t, task["original"]) for t in row["texts"]),
        "energy": statistics.mean(row["common"]),
        "sentence": statistics.mean(row["sentence"]),
        "self_bleu": self_bleu([normal(t) for t in row["texts"]]) if len(row["texts"]) > 1 else 1.0,
        "seconds": row["seconds"],
        "sequences": row["sequences"],
    }


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def quartiles(values: list[float]) -> tuple[float, float, float]:
    values = sorted(values)
    if len(values) < 2:
        return (values[0],) * 3 if values else (float("nan"),) * 3
    q = statistics.quantiles(values, n=4)
    return q[0], statistics.median(values), q[2]


def row_table(done: list[dict]) -> dict:
    """Per row, the mean of every metric over the tasks of ``done`` it ran on, and their number."""
    table = {}
    for name in ROWS:
        rows = [
            (row_metrics(t, t["rows"][name]), statistics.mean(t["rows"]["default"]["common"]))
            for t in done
            if name in t["rows"]
        ]
        if rows:
            table[name] = {key: mean(float(m[key]) for m, _ in rows if m[key] is not None) for key in KEYS} | {
                "tasks": len(rows),
                "margin": mean(m["energy"] - d for m, d in rows),
            }
    return table


def missed(done: list[dict]) -> tuple[int, int]:
    """The tasks where another row returned the removed words and the default did not, and how many of them
    have the removed words scoring below all the default's 5 under the common energy."""
    count = lower = 0
    for t in done:
        removed, default = normal(t["removed"]), t["rows"]["default"]
        if any(normal(f) == removed for f in default["fills"]):
            continue
        found = [
            row["common"][k] for row in t["rows"].values() for k, f in enumerate(row["fills"]) if normal(f) == removed
        ]
        if found:
            count, lower = count + 1, lower + (max(found) < min(default["common"]))
    return count, lower


def summarise(done: list[dict]) -> tuple[dict, dict]:
    """The rows on every task (``fixed-1`` on the full tasks only: elsewhere it runs on one-word spans alone),
    the rows on the full tasks, and the comparisons the targets name."""
    full = [t for t in done if "fixed-2" in t["rows"]]
    table = row_table(
        [{**t, "rows": {k: v for k, v in t["rows"].items() if k != "fixed-1" or t in full}} for t in done]
    )
    metrics = {name: {t["task"]: row_metrics(t, t["rows"][name]) for t in done if name in t["rows"]} for name in ROWS}
    default, l2r, oracle = metrics["default"], metrics["l2r-reranked"], metrics["oracle"]
    shares = Counter(t["words"] for t in done)
    words = {t["task"]: t["words"] for t in done}
    wins = [default[i]["energy"] >= l2r[i]["energy"] for i in default]
    ratios = [default[i]["seconds"] / oracle[i]["seconds"] for i in default]
    one = [t for t in done if t["words"] == 1]
    token = {t["task"]: metrics["token-1"].get(t["task"], metrics["oracle"][t["task"]]) for t in one}
    word = {t["task"]: metrics["fixed-1"][t["task"]] for t in one}
    word_ratios = [word[i]["seconds"] / token[i]["seconds"] for i in word]
    compare = {
        "best_fixed_exact": max(shares[n] / len(done) for n in range(1, 5)),
        "best_fixed_length": max(range(1, 5), key=lambda n: shares[n]),
        "energy_wins": mean(wins),
        "energy_margin": quartiles([default[i]["energy"] - l2r[i]["energy"] for i in default]),
        "sequence_ratio": mean(l2r[i]["sequences"] / default[i]["sequences"] for i in default),
        "seconds_ratio": quartiles(ratios),
        "seconds_ratio_of_totals": sum(m["seconds"] for m in default.values())
        / sum(m["seconds"] for m in oracle.values()),
        "one_word": len(one),
        "one_word_pieces": sum(t["tokens"] > 1 for t in one),
        "word": {k: mean(float(m[k]) for m in word.values()) for k in ("recovered", "recall", "energy", "seconds")},
        "token": {k: mean(float(m[k]) for m in token.values()) for k in ("recovered", "recall", "energy", "seconds")},
        "word_energy_wins": mean(word[i]["energy"] >= token[i]["energy"] for i in word),
        "word_seconds_ratio": quartiles(word_ratios),
        "by_length": {
            n: {
                name: mean(float(m["exact"]) for i, m in metrics[name].items() if words[i] == n)
                for name in ("default", "per-length", "l2r-reranked", "mask-predict")
            }
            for n in range(1, 5)
            if shares[n]
        },
        "confusion": Counter((t["words"], default[t["task"]]["length"]) for t in done),
        "counts": [shares[n] for n in range(1, 5)],
        "full": row_table(full),
        "full_tasks": len(full),
        "missed": missed(done),
    }
    return table, compare


# ---------------------------------------------------------------- report


def verdicts(table: dict, c: dict) -> list[tuple[str, str, bool]]:
    d = table["default"]
    lines = [
        (
            f"exact-length rate >= best fixed length's + {TARGETS['exact_over_best_fixed']:.2f}",
            f"{d['exact']:.3f} vs best fixed length (length {c['best_fixed_length']}) {c['best_fixed_exact']:.3f} "
            f"(+{TARGETS['exact_over_best_fixed']:.2f} = {c['best_fixed_exact'] + TARGETS['exact_over_best_fixed']:.3f})",
            d["exact"] >= c["best_fixed_exact"] + TARGETS["exact_over_best_fixed"],
        ),
        (
            f"mean abs length error <= {TARGETS['max_length_error']} words",
            f"{d['error']:.3f}",
            d["error"] <= TARGETS["max_length_error"],
        ),
        (
            f"recovery@5 >= {TARGETS['recovery_over_oracle']}x the oracle length's",
            f"{d['recovered']:.3f} vs oracle {table['oracle']['recovered']:.3f} "
            f"(x{TARGETS['recovery_over_oracle']} = {TARGETS['recovery_over_oracle'] * table['oracle']['recovered']:.3f})",
            d["recovered"] >= TARGETS["recovery_over_oracle"] * table["oracle"]["recovered"],
        ),
        (
            f"mean energy of the 5 >= l2r-reranked's on >= {TARGETS['energy_win_share']:.0%} of tasks",
            f"{c['energy_wins']:.3f} of tasks (l2r used {c['sequence_ratio']:.3f}x the default's sequences)",
            c["energy_wins"] >= TARGETS["energy_win_share"],
        ),
        (
            f"wall time of a [MASK*?] run <= {TARGETS['seconds_over_token']:.0f}x a token-blank run of the true length",
            "per-task ratio median {1:.2f} (quartiles {0:.2f}-{2:.2f}); ratio of totals {3:.2f}".format(
                *c["seconds_ratio"], c["seconds_ratio_of_totals"]
            ),
            c["seconds_ratio"][1] <= TARGETS["seconds_over_token"],
        ),
    ]
    return lines


def decision(c: dict) -> tuple[str, bool]:
    w, t = c["word"], c["token"]
    ok = (
        w["recovered"] >= t["recovered"]
        and w["energy"] >= t["energy"]
        and c["word_seconds_ratio"][1] <= TARGETS["word_over_token_seconds"]
    )
    text = (
        f"On the {c['one_word']} one-word spans ({c['one_word_pieces']} of them words of several tokens): "
        f"word blanks (`[MASK]`, blank_unit word) recovery@5 {w['recovered']:.3f}, word recall@5 "
        f"{w['recall']:.3f}, mean energy {w['energy']:.2f}, {w['seconds']:.1f} s; token blanks (`[MASK]`, "
        f"blank_unit token, today's) recovery@5 {t['recovered']:.3f}, word recall@5 {t['recall']:.3f}, mean "
        f"energy {t['energy']:.2f}, {t['seconds']:.1f} s. Word blanks' energy >= token blanks' on "
        f"{c['word_energy_wins']:.2f} of these tasks; per-task time ratio word/token median "
        "{1:.2f} (quartiles {0:.2f}-{2:.2f}).".format(*c["word_seconds_ratio"])
    )
    return text, ok


def table_lines(table: dict) -> list[str]:
    lines = [
        "| row | tasks | exact length | mean abs length error | recovery@5 | word recall@5 | BLEU | mean energy "
        "| minus default's | sentence PLL-word-l2r | self-BLEU | seconds | encoder sequences |",
        "|---|" + "---:|" * 12,
    ]
    for name, r in table.items():
        lines.append(
            f"| {name} | {r['tasks']} | {r['exact']:.3f} | {r['error']:.2f} | {r['recovered']:.3f} | "
            f"{r['recall']:.3f} | {r['bleu']:.3f} | {r['energy']:.2f} | {r['margin']:+.2f} | "
            f"{r['sentence']:.2f} | {r['self_bleu']:.3f} | {r['seconds']:.1f} | {r['sequences']:.0f} |"
        )
    return lines


def write_report(out: Path, done: list[dict], args, planned: int) -> None:
    table, c = summarise(done)
    versions = harness_versions()
    lines = [
        "# Blanks of any length: the benchmark",
        "",
        f"`nice python -m scripts.spans --model {args.model} --tasks {args.tasks} --seed {args.seed} "
        f"--full-every {args.full_every}` "
        f"({versions}; the shared 2-core CPU, one thread).",
        "",
        f"**{len(done)} of {planned} tasks done** (the script resumes; the report covers the tasks done). Tasks: "
        f"odd-numbered lines of `{Path(args.corpus).name}` (held out from the energy's calibration), 8-20 words, "
        f"removed spans of 1, 2, 3, 4 words: {', '.join(map(str, c['counts']))}; `tasks.jsonl` lists them, "
        "`results.jsonl` holds every row's fillings, energies, seconds and encoder sequences per task. Rows "
        f"and metrics: see the docstring of `scripts/spans.py`; energy: every row's fills scored by the default "
        f"span energy ({', '.join(sorted({t['energy'] for t in done}))}), mean of the 5; 'minus "
        "default's': the mean over the row's tasks of its energy minus the default's on the same task.",
        "",
    ]
    notes = sorted({(name, row["note"]) for t in done for name, row in t["rows"].items() if "note" in row})
    for name, note in notes:
        tasks = [t["task"] for t in done if "note" in t["rows"].get(name, {})]
        lines += [f"Note, {name} on tasks {', '.join(map(str, tasks))}: {note}.", ""]
    lines += table_lines(table) + [
        "",
        f"The {c['full_tasks']} tasks where every row ran (`--full-every "
        f"{args.full_every}`; fixed-1 also ran on every one-word span, for the decision "
        "below, and is counted above on these tasks only):",
        "",
    ]
    lines += table_lines(c["full"])
    lines += [
        "",
        "Exact-length rate by the removed span's length:",
        "",
        "| words removed | tasks | " + " | ".join(next(iter(c["by_length"].values()))) + " |",
        "|---:|---:|" + "---:|" * len(next(iter(c["by_length"].values()))),
    ]
    for n, rates in c["by_length"].items():
        cells = ("-" if v != v else f"{v:.2f}" for v in rates.values())  # nan: the row ran on none of them
        lines.append(f"| {n} | {c['counts'][n - 1]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Length of the default's top filling (rows) against the removed span's (columns):",
        "",
        "| chosen \\ true | 1 | 2 | 3 | 4 |",
        "|---:|---:|---:|---:|---:|",
    ]
    for chosen in range(0, 5):
        lines.append(f"| {chosen} | " + " | ".join(str(c["confusion"].get((n, chosen), 0)) for n in range(1, 5)) + " |")
    lines += ["", "## Targets (the default row)", "", "| target | measured | met |", "|---|---|---|"]
    for target, measured, met in verdicts(table, c):
        lines.append(f"| {target} | {measured} | {'yes' if met else 'NO'} |")
    lines += [
        "",
        "Default energy minus l2r-reranked's per task: quartiles {:.2f}, {:.2f}, {:.2f}.".format(*c["energy_margin"]),
        "",
        "Recovery: on {} tasks another row returned the removed words and the default did not; on {} of "
        "them the removed words score below every one of the default's 5 under the common energy. There the "
        "energy prefers other fills, and finding higher-energy fills recovers less.".format(*c["missed"]),
    ]
    text, ok = decision(c)
    lines += [
        "",
        "## Do `[MASK]` and `[MASK*n]` become word blanks by default?",
        "",
        text,
        "",
        "Rule (set when word blanks were planned): yes unless word blanks are worse on one-word spans (here: lower recovery@5 "
        "or lower mean energy than token blanks) or take more than 2x their time (per-task median). "
        f"**Verdict: {'word blanks become the default' if ok else 'token blanks stay the default'}** "
        f"(on {c['one_word']} one-word tasks).",
        "",
        "![spans](spans.png)",
        "",
    ]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    plot(out / "spans.png", table, c)


def plot(path: Path, table: dict, c: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = list(table)
    x = range(len(names))
    for k, (key, label) in enumerate(
        (("exact", "exact length"), ("recovered", "recovery@5"), ("recall", "word recall@5"))
    ):
        left.bar([i + 0.27 * (k - 1) for i in x], [table[n][key] for n in names], 0.27, label=label)
    left.axhline(c["best_fixed_exact"], color="grey", linestyle="--", linewidth=1, label="best fixed length (exact)")
    left.set_xticks(list(x), names, rotation=30, ha="right")
    left.set_ylim(0, 1)
    left.legend(fontsize=8)
    left.set_title("top filling's length and recovery, per row")
    for name in names:
        r = table[name]
        right.scatter(r["sequences"], r["margin"], label=name)
    right.set_xscale("log")
    right.set_xlabel("encoder sequences per task")
    right.set_ylabel("mean energy of the 5 minus the default's (same tasks)")
    right.legend(fontsize=8)
    right.set_title("energy against compute")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="../shared/models/infill-dev-minilm-mlm")
    parser.add_argument("--corpus", default="../shared/corpora/bert-gen/wiki103.5k.txt")
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="eval/spans-minilm")
    parser.add_argument(
        "--full-every",
        type=int,
        default=1,
        help="run fixed-2 and per-length (and fixed-1 beyond one-word spans) on every N-th task",
    )
    parser.add_argument(
        "--shard",
        default="0/1",
        help="I/N: run the tasks whose index is I modulo N (N processes "
        "append to the same results file; run --report-only after them)",
    )
    parser.add_argument("--report-only", action="store_true", help="write the report from the results so far")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = make_tasks(Path(args.corpus), args.tasks, args.seed)
    (out / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    results = out / "results.jsonl"

    def read() -> list[dict]:  # every shard's tasks so far, in task order
        lines = results.read_text(encoding="utf-8").splitlines() if results.exists() else []
        return sorted((json.loads(line) for line in lines), key=lambda t: t["task"])

    done = read()
    if not args.report_only:
        from infill import Infiller

        torch.set_num_threads(1)
        infiller = Infiller(args.model)
        finished = {t["task"] for t in done}
        shard, shards = map(int, args.shard.split("/"))
        for task in tasks:
            if task["task"] in finished or task["task"] % shards != shard:
                continue
            begin = time.perf_counter()
            record = run_task(infiller, task, args.seed + task["task"], args.full_every)
            with results.open("a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
            print(f"task {task['task']}: {time.perf_counter() - begin:.0f} s", file=sys.stderr, flush=True)
            write_report(out, read(), args, len(tasks))
        done = read()
    if done:
        write_report(out, done, args, len(tasks))


if __name__ == "__main__":
    main()
