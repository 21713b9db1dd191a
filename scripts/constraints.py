"""Fillings under constraints on bert-gen sentences: keywords (``include=``) and rewrite, against
the masked LM's own draws with rejection at equal encoder sequences.

    python -m scripts.constraints --model ../shared/models/infill-dev-minilm-mlm --out eval/constraints-minilm
        [--keywords 100] [--rewrites 50] [--changes 0.2,0.5] [--sampler-every 1] [--rewrite-chains 25]
        [--shard I/N] [--report-only]

Keywords: sentences of 12-30 words with 6-10 one-token words made ``[MASK]``; each task includes the
removed word, a related word, or both (in turn). The related word is picked from the corpora themselves: the
word that co-occurs most (over the square root of its frequency) with the sentence's content words in the
other sentences, one token for the model, not in the sentence. Rows per task, one after another: the
default run with ``include`` (``gibbs``, 25 chains, 12 steps, top 5), every MH sampler of ``SAMPLERS`` at the
same settings (on every ``--sampler-every``-th task), and left-to-right and independent draws with rejection
given the default row's encoder sequences: a draw costs ``d`` (left-to-right) or 1 (independent) sequences, a
distinct satisfying draw ``d`` more for its PLL; the 5 satisfying draws of highest PLL are returned.

Rewrite: sentences of 10-25 words, every one-token word a blank, at each change fraction. ``gibbs-mh`` at
the default 12 steps sets the budget; ``dmala``, ``dlmc`` and ``gwg`` get the steps that spend it (a cost
model; the actual count is recorded); left-to-right draws of the whole template keep those whose changed
fraction is within ``TOLERANCE`` of the target. A variant is "near" when its changed fraction is within
``TOLERANCE`` of the target; a row's PLL at that change is the mean PLL of its near variants.

Each task's rows are one line of ``OUT/runs.jsonl``, appended as soon as they finish; a rerun skips tasks
already there, and the report (``report.md``, ``report.json``, two plots) is rebuilt from it after every task.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Optional

import torch

from infill import Infiller
from infill.constraints import include_term, source_categories
from infill.energies import MaskedLMEnergy, one_hot
from infill.energies.base import evaluate
from infill.evaluation.corpora import normalize
from infill.evaluation.report import EVAL_PACKAGES
from infill.evaluation.tables import fmt, mean_defined, signature_block, table
from infill.evaluation.tasks import Task
from infill.lm.mlm_draws import ORDERS, draw
from infill.metrics import self_bleu
from infill.pipeline.config import RunConfig
from infill.pipeline.rewrite import rewrite_template
from infill.pipeline.signature import library_versions
from scripts.harness import CORPORA as BERT_GEN
from scripts.harness import Rows

CORPORA = {"wt103": ("wiki103.5k.txt", "wikitext103"), "tbc": ("tbc.5k.txt", "tbc")}
SEED = 20
TOP = 5
KEYWORD_TASKS = 100
SAMPLERS = ("gibbs-mh", "gwg", "dmala", "dlmc")
REWRITE_SAMPLERS = ("gibbs-mh", "dmala", "dlmc", "gwg")
REJECTION = ("left-to-right", "independent")
KINDS = ("removed", "related", "both")
COMMON = 100  # the corpus' most frequent words are not content words
TOLERANCE = 0.1  # a variant is near the target change when its changed fraction is within this
GRADIENT_COST = 2  # sequences per chain and blank of a gradient step (forward and backward)


# ---------------------------------------------------------------- tasks


def load_sentences(corpora: Path) -> dict[str, list[list[str]]]:
    return {
        name: [normalize(line, convention) for line in (corpora / file).read_text().splitlines() if line.strip()]
        for name, (file, convention) in CORPORA.items()
    }


class Vocabulary:
    """Which words are one sampleable token for the model, and the corpora's word statistics."""

    def __init__(self, infiller: Infiller, sentences: dict[str, list[list[str]]]):
        tokens = infiller.tokenizer.convert_ids_to_tokens(infiller.category_ids().tolist())
        self.one_token = {t for t in tokens if t.isalpha()}
        self.all = [(name, i, words) for name, group in sentences.items() for i, words in enumerate(group)]
        df = Counter(w for _, _, words in self.all for w in set(words))
        self.df = df
        self.common = {w for w, _ in df.most_common(COMMON)}
        self.index: dict[str, list[int]] = defaultdict(list)
        for k, (_, _, words) in enumerate(self.all):
            for w in self.content(words):
                self.index[w].append(k)

    def content(self, words) -> set[str]:
        return {w for w in words if w.isalpha() and len(w) >= 3 and w not in self.common}

    def related(self, words: tuple[str, ...]) -> Optional[str]:
        """The word that co-occurs most with ``words``' content words in other sentences (count over the
        square root of its frequency, ties to the alphabetically first), one token, not in the sentence."""
        counts: Counter = Counter()
        for k in {k for w in self.content(words) for k in self.index[w]}:
            other = self.all[k][2]
            if tuple(other) != words:
                counts.update(self.content(other))
        ranked = sorted(
            (
                (c / math.sqrt(self.df[w]), w)
                for w, c in counts.items()
                if c >= 2 and w not in words and w in self.one_token
            ),
            key=lambda s: (-s[0], s[1]),
        )
        return ranked[0][1] if ranked else None


def keyword_tasks(vocabulary: Vocabulary, sentences: dict, count: int) -> list[dict]:
    """``count`` tasks, corpora interleaved, kinds in turn (removed, related, both)."""
    rng = random.Random(SEED)
    per_corpus = {}
    for name, group in sentences.items():
        order = list(range(len(group)))
        rng.shuffle(order)
        per_corpus[name] = iter(order)
    tasks, seen = [], set()
    names = list(sentences)
    while len(tasks) < count:
        name = names[len(tasks) % len(names)]
        index = next(per_corpus[name])
        words = tuple(sentences[name][index])
        blanks = [i for i, w in enumerate(words) if w in vocabulary.one_token]
        d = rng.randint(6, 10)
        if not 12 <= len(words) <= 30 or len(blanks) < d + 3 or words in seen or "[UNK]" in words:
            continue
        masked = tuple(sorted(rng.sample(blanks, d)))
        removed = [words[i] for i in masked if words[i] in vocabulary.content(words)] or [words[i] for i in masked]
        kind = KINDS[len(tasks) % len(KINDS)]
        related = vocabulary.related(words) if kind != "removed" else None
        if kind != "removed" and related is None:
            continue
        include = {"removed": [rng.choice(removed)], "related": [related], "both": [rng.choice(removed), related]}
        seen.add(words)
        tasks.append(
            {
                "id": f"{name}-{index}",
                "corpus": name,
                "words": words,
                "masked": masked,
                "kind": kind,
                "include": include[kind],
            }
        )
    return tasks


def rewrite_tasks(sentences: dict, count: int, exclude: set) -> list[dict]:
    rng = random.Random(SEED + 1)
    chosen = []
    for name, group in sentences.items():
        candidates = sorted({tuple(w) for w in group if 10 <= len(w) <= 25 and "[UNK]" not in w} - exclude)
        chosen.append(
            [
                {"id": f"{name}-{group.index(list(w))}", "corpus": name, "text": " ".join(w)}
                for w in rng.sample(candidates, (count + 1) // 2)
            ]
        )
    return [t for pair in zip(*chosen) for t in pair][:count]


# ---------------------------------------------------------------- keywords


def sampler_row(infiller: Infiller, task: Task, words: list[str], config: RunConfig) -> dict:
    start = time.perf_counter()
    (result,) = infiller.run([task.template], config)
    seconds = time.perf_counter() - start
    final = result.trace.final_state.x
    include = include_term(infiller.tokenizer, infiller.category_ids(), words, final.shape[1])
    return {
        "texts": [task.fill(s.fills) for s in result.samples],
        "plls": [s.energy for s in result.samples],
        "satisfied": [s.terms["include"] == 0 for s in result.samples],
        "chains_satisfied": (evaluate(include, one_hot(final, include.num_categories)) == 0).float().mean().item(),
        "encoder_sequences": result.diagnostics.encoder_sequences,
        "seconds": seconds,
        "acceptance_rate": result.diagnostics.acceptance_rate,
    }


def rejection(infiller: Infiller, text: str, method: str, budget: int, seed: int, keep, limit: int) -> dict:
    """Draws of ``method`` on the template ``text`` while the budget lasts, keeping those that
    ``keep(rows) -> (B,) bool`` accepts
    (the first ``limit`` distinct ones, each scored by its PLL: ``d`` sequences); the returned dict has the
    kept rows and their PLLs, the draws taken, and the sequences spent."""
    start = time.perf_counter()
    template = infiller.parse(text)
    categories = infiller.category_ids()
    energy = MaskedLMEnergy(
        infiller.model,
        template.input_ids,
        template.blank_positions,
        categories,
        infiller.tokenizer.mask_token_id,
        512,
    )
    d, cost = template.num_blanks, ORDERS[method].forwards(template.num_blanks)
    generator = torch.Generator(infiller.device).manual_seed(seed)
    chunk = max(1, min(budget // cost, 100 if cost == 1 else 25))
    kept: dict[tuple, None] = {}
    draws = spent = 0
    while spent + cost <= budget:
        rows = draw(energy, method, chunk, generator)
        accepted = keep(rows).tolist()
        for row, ok in zip(rows.tolist(), accepted):
            new = ok and tuple(row) not in kept and len(kept) < limit
            if spent + cost + (d if new else 0) > budget:
                spent = budget  # the next draw does not fit
                break
            draws, spent = draws + 1, spent + cost + (d if new else 0)
            if new:
                kept[tuple(row)] = None
    spent = draws * cost + len(kept) * d
    rows = torch.tensor(list(kept), dtype=torch.long).reshape(-1, d)
    plls = (
        torch.cat([evaluate(energy, one_hot(part, len(categories))) for part in rows.split(64)])
        if len(rows)
        else torch.zeros(0)
    )
    tokens = [infiller.tokenizer.convert_ids_to_tokens(categories[r].tolist()) for r in rows]
    return {
        "rows": rows,
        "plls": plls.tolist(),
        "tokens": tokens,
        "draws": draws,
        "encoder_sequences": spent,
        "seconds": time.perf_counter() - start,
    }


def keyword_rejection(infiller: Infiller, task: Task, words: list[str], method: str, budget: int) -> dict:
    include = include_term(infiller.tokenizer, infiller.category_ids(), words, len(task.masked))
    run = rejection(
        infiller,
        task.template,
        method,
        budget,
        SEED,
        lambda rows: evaluate(include, one_hot(rows, include.num_categories)) == 0,
        limit=10**9,
    )
    best = sorted(range(len(run["plls"])), key=lambda k: -run["plls"][k])[:TOP]
    return {
        "texts": [task.fill(run["tokens"][k]) for k in best],
        "plls": [run["plls"][k] for k in best],
        "satisfied": [True] * len(best),
        "found": len(run["plls"]),
        "draws": run["draws"],
        "budget": budget,
        "encoder_sequences": run["encoder_sequences"],
        "seconds": run["seconds"],
    }


def run_keywords(infiller: Infiller, spec: dict, with_samplers: bool) -> dict:
    task = Task(spec["id"], spec["corpus"], spec["words"], spec["masked"])
    words = spec["include"]
    rows = {"gibbs (default)": sampler_row(infiller, task, words, RunConfig.create(top=TOP, seed=SEED, include=words))}
    budget = rows["gibbs (default)"]["encoder_sequences"]
    for method in REJECTION:
        rows[f"{method}+rejection"] = keyword_rejection(infiller, task, words, method, budget)
    for name in SAMPLERS if with_samplers else ():
        rows[name] = sampler_row(
            infiller, task, words, RunConfig.create(method=name, top=TOP, seed=SEED, include=words)
        )
    return {**spec, "template": task.template, "blanks": len(task.masked), "rows": rows}


# ---------------------------------------------------------------- rewrite


def step_cost(sampler: str, chains: int, d: int) -> int:
    """Encoder sequences of one step over ``chains`` chains: ``gibbs-mh`` one masked copy per chain for the
    proposal and ``d`` for the proposal's PLL; gradient samplers a forward and a backward of ``d`` copies."""
    return chains * (d + 1) if sampler == "gibbs-mh" else GRADIENT_COST * chains * d


def steps_for(sampler: str, budget: int, chains: int, d: int) -> int:
    """The steps whose run (3 calibration rounds of ``max(4, steps // 2)`` steps, then ``steps``; an energy,
    with its gradient for gradient samplers, at each start) spends about ``budget``."""
    per_step = step_cost(sampler, chains, d)
    per_start = chains * d if sampler == "gibbs-mh" else GRADIENT_COST * chains * d
    cost = lambda s: d + 4 * per_start + (3 * max(4, s // 2) + s) * per_step  # noqa: E731
    return min(range(1, 200), key=lambda s: abs(cost(s) - budget))


def rewrite_variants(result, template: str, source_pll: float, d: int) -> dict:
    return {
        "texts": [fill_template(template, s.fills) for s in result.samples],
        "plls": [s.energy for s in result.samples],
        "changed": [-s.terms["closeness"] / d for s in result.samples],
        "encoder_sequences": result.diagnostics.encoder_sequences,
        "source_pll": source_pll,
        "acceptance_rate": result.diagnostics.acceptance_rate,
    }


def run_rewrite(infiller: Infiller, spec: dict, change: float, chains: int) -> dict:
    text = spec["text"]
    template, _, source = rewrite_template(text, infiller.tokenizer)
    parsed = infiller.parse(template)
    categories = infiller.category_ids()
    source = source_categories(categories, torch.tensor(source))
    d = len(source)
    energy = MaskedLMEnergy(
        infiller.model,
        parsed.input_ids,
        parsed.blank_positions,
        categories,
        infiller.tokenizer.mask_token_id,
        512,
    )
    source_pll = evaluate(energy, one_hot(source[None], len(categories))).item()
    rows, budget = {}, None
    for name in REWRITE_SAMPLERS:
        steps = RunConfig.steps if budget is None else steps_for(name, budget, chains, d)
        start = time.perf_counter()
        result = infiller.rewrite(text, change, sampler=name, num_samples=chains, steps=steps, seed=SEED)
        rows[name] = {
            **rewrite_variants(result, template, source_pll, d),
            "steps": steps,
            "seconds": time.perf_counter() - start,
        }
        budget = budget or result.diagnostics.encoder_sequences
    near = lambda rows: (rows != source).float().mean(1).sub(change).abs() <= TOLERANCE + 1e-9  # noqa: E731
    run = rejection(infiller, template, "left-to-right", budget, SEED, near, limit=chains)
    rows["left-to-right+rejection"] = {
        "texts": [fill_template(template, t) for t in run["tokens"]],
        "plls": run["plls"],
        "changed": (run["rows"] != source).float().mean(1).tolist() if len(run["rows"]) else [],
        "encoder_sequences": run["encoder_sequences"],
        "source_pll": source_pll,
        "draws": run["draws"],
        "seconds": run["seconds"],
        "budget": budget,
    }
    return {**spec, "change": change, "blanks": d, "template": template, "rows": rows}


def fill_template(template: str, tokens: list[str]) -> str:
    it = iter(tokens)
    return " ".join(next(it) if w == "[MASK]" else w for w in template.split())


# ---------------------------------------------------------------- report


def bleu(texts: list[str]) -> Optional[float]:
    return 100 * self_bleu(texts) if len(texts) >= 2 else None


def keyword_summary(tasks: list[dict]) -> dict:
    names = list(dict.fromkeys(n for t in tasks for n in t["rows"]))
    summary = {}
    for name in names:
        runs = [t["rows"][name] for t in tasks if name in t["rows"]]
        returned = [s for r in runs for s in r["satisfied"]]
        summary[name] = {
            "tasks": len(runs),
            "returned": len(returned),
            "satisfied": sum(returned) / len(returned) if returned else None,
            "chains_satisfied": mean_defined(r.get("chains_satisfied") for r in runs),
            "mean_pll": mean_defined(satisfying_pll(r) for r in runs),
            "self_bleu": mean_defined(bleu(r["texts"]) for r in runs),
            "encoder_sequences": statistics.fmean(r["encoder_sequences"] for r in runs),
            "seconds": statistics.fmean(r["seconds"] for r in runs),
            "found": (sum(r["found"] > 0 for r in runs) / len(runs)) if "found" in runs[0] else None,
        }
    return summary


def with_samplers(tasks: list[dict]) -> list[dict]:
    """The keyword tasks that ran every sampler row."""
    return [t for t in tasks if all(name in t["rows"] for name in SAMPLERS)]


def satisfying_pll(run: dict) -> Optional[float]:
    plls = [p for p, ok in zip(run["plls"], run["satisfied"]) if ok]
    return statistics.fmean(plls) if plls else None


def against(tasks: list[dict], ours: str, theirs: str) -> dict:
    """``ours`` against rejection ``theirs`` on the tasks where rejection found any satisfying filling:
    where our mean PLL of satisfying fillings is at least theirs; and the ratios of sequences and seconds."""
    tasks = [t for t in tasks if ours in t["rows"]]
    pairs = [(t["rows"][ours], t["rows"][theirs]) for t in tasks if t["rows"][theirs]["found"]]
    wins = [a for a, b in pairs if satisfying_pll(a) is not None and satisfying_pll(a) >= satisfying_pll(b)]
    ratios = sorted(b["encoder_sequences"] / a["encoder_sequences"] for a, b in pairs)
    times = sorted(a["seconds"] / b["seconds"] for a, b in pairs)
    gaps = [satisfying_pll(a) - satisfying_pll(b) for a, b in pairs if satisfying_pll(a) is not None]
    return {
        "row": ours,
        "rejection": theirs,
        "tasks": len(tasks),
        "found": len(pairs),
        "wins": len(wins),
        "mean_gap": statistics.fmean(gaps) if gaps else None,
        "median_gap": statistics.median(gaps) if gaps else None,
        "sequences_ratio": (ratios[0], statistics.median(ratios), ratios[-1]) if ratios else None,
        "time_ratio": (times[0], statistics.median(times), times[-1]) if times else None,
    }


def near_pll(run: dict, change: float) -> Optional[float]:
    plls = [p - run["source_pll"] for p, c in zip(run["plls"], run["changed"]) if abs(c - change) <= TOLERANCE + 1e-9]
    return statistics.fmean(plls) if plls else None


def hits(run: dict, change: float) -> int:
    """Distinct variants that reach the source's PLL having changed at least ``change - TOLERANCE``."""
    return len(
        {
            t
            for t, p, c in zip(run["texts"], run["plls"], run["changed"])
            if p >= run["source_pll"] and c >= change - TOLERANCE - 1e-9
        }
    )


def rewrite_summary(tasks: list[dict]) -> dict:
    summary = {}
    for change in sorted({t["change"] for t in tasks}):
        group = [t for t in tasks if t["change"] == change]
        names = list(dict.fromkeys(n for t in group for n in t["rows"]))
        rows = {}
        for name in names:
            runs = [t["rows"][name] for t in group]
            variants = [c for r in runs for c in r["changed"]]
            near = [near_pll(r, change) for r in runs]
            rows[name] = {
                "sentences": len(runs),
                "variants": len(variants),
                "changed": statistics.fmean(variants) if variants else None,
                "near": (sum(abs(c - change) <= TOLERANCE + 1e-9 for c in variants) / len(variants))
                if variants
                else None,
                "found": sum(bool(r["plls"]) for r in runs) / len(runs),
                "pll_gap": mean_defined(
                    statistics.fmean(p - r["source_pll"] for p in r["plls"]) if r["plls"] else None for r in runs
                ),
                "near_pll_gap": mean_defined(near),
                "hits": statistics.fmean(hits(r, change) for r in runs),
                "sequences_per_hit": per_hit([(r, change) for r in runs]),
                "self_bleu": mean_defined(bleu(r["texts"]) for r in runs),
                "encoder_sequences": statistics.fmean(r["encoder_sequences"] for r in runs),
                "steps": mean_defined(r.get("steps") for r in runs),
                "seconds": statistics.fmean(r["seconds"] for r in runs),
                "acceptance_rate": mean_defined(r.get("acceptance_rate") for r in runs),
            }
        summary[f"{change:g}"] = rows
    return summary


def per_hit(pairs: list[tuple[dict, float]]) -> Optional[float]:
    """Encoder sequences spent per hit (:func:`hits`), pooled over ``(run, change)`` pairs."""
    found = sum(hits(run, change) for run, change in pairs)
    return sum(run["encoder_sequences"] for run, _ in pairs) / found if found else None


def rewrite_winner(tasks: list[dict]) -> Optional[str]:
    """The MCMC sampler with the fewest encoder sequences per hit, pooled over every (sentence, change)."""
    costs = {name: per_hit([(t["rows"][name], t["change"]) for t in tasks]) for name in REWRITE_SAMPLERS}
    reached = [(cost, name) for name, cost in costs.items() if cost is not None]
    return min(reached)[1] if reached else None


def plot(keywords: list[dict], rewrite: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 4.5))
    paired, means = figure.subplots(1, 2)
    for method, marker in zip(REJECTION, "so"):
        pairs = [
            (satisfying_pll(t["rows"][f"{method}+rejection"]), satisfying_pll(t["rows"]["gibbs (default)"]))
            for t in keywords
            if t["rows"][f"{method}+rejection"]["found"]
        ]
        pairs = [(x, y) for x, y in pairs if y is not None]
        paired.scatter([x for x, _ in pairs], [y for _, y in pairs], marker=marker, s=18, label=f"{method}+rejection")
    low, high = paired.get_xlim()
    paired.plot([low, high], [low, high], color="grey", lw=0.5)
    paired.set_xlabel("rejection: mean PLL of its satisfying fillings")
    paired.set_ylabel("default (gibbs): mean PLL of its satisfying fillings")
    paired.set_title("keywords, per task where rejection found any (equal sequences)", fontsize=9)
    paired.legend(fontsize=7)
    full = with_samplers(keywords)
    for name, row in (keyword_summary(full) if full else {}).items():
        if row["mean_pll"] is not None:
            means.scatter(row["encoder_sequences"], row["mean_pll"], s=20, marker="s" if "rejection" in name else "o")
            means.annotate(
                f"{name} ({100 * row['satisfied']:.0f}% sat.)", (row["encoder_sequences"], row["mean_pll"]), fontsize=7
            )
    means.set_xlabel("encoder sequences per task")
    means.set_ylabel("mean PLL of the satisfying returned fillings")
    means.set_title(f"keywords, every row, on the {len(full)} tasks that ran them all", fontsize=9)
    figure.tight_layout()
    figure.savefig(out / "keywords.png", dpi=130)

    figure = Figure(figsize=(7, 5))
    axis = figure.subplots()
    colours = {}
    for task in rewrite:
        for name, run in task["rows"].items():
            colour = colours.setdefault(name, f"C{len(colours)}")
            axis.scatter(
                run["changed"],
                [p - run["source_pll"] for p in run["plls"]],
                s=5,
                alpha=0.25,
                color=colour,
                marker="o" if task["change"] == 0.2 else "^",
            )
    for change, rows in rewrite_summary(rewrite).items():
        for name, row in rows.items():
            if row["changed"] is not None:
                axis.scatter(
                    row["changed"],
                    row["pll_gap"],
                    s=70,
                    color=colours[name],
                    edgecolors="black",
                    marker="o" if change == "0.2" else "^",
                    label=f"{name} @ change {change}",
                )
    for change in {t["change"] for t in rewrite}:
        axis.axvline(change, color="grey", lw=0.5)
    axis.set_xlabel("fraction of words changed")
    axis.set_ylabel("PLL - PLL of the source")
    axis.set_title("rewrite: variants (small) and row means (large), equal encoder sequences", fontsize=9)
    axis.legend(fontsize=6)
    figure.tight_layout()
    figure.savefig(out / "rewrite.png", dpi=130)


def markdown(report: dict) -> str:
    kw, rw = report["keywords"], report["rewrite"]
    columns = [
        ("tasks", "tasks", 0),
        ("satisfied", "satisfied ↑", 3),
        ("chains_satisfied", "chains' finals sat.", 3),
        ("mean_pll", "PLL of satisfying ↑", 2),
        ("self_bleu", "self-BLEU ↓", 1),
        ("encoder_sequences", "enc. seqs", 0),
        ("seconds", "s/task", 1),
        ("found", "found any", 2),
    ]
    header = ["row", *(t for _, t, _ in columns)]
    lines = [
        "# Fillings under constraints",
        "",
        f"Keywords: {kw['tasks']} tasks done; rewrite: {rw['tasks']} (sentence, change) pairs done.",
        "",
        "## Keywords",
        "",
        *table(header, [[n, *(fmt(r[k], dg) for k, _, dg in columns)] for n, r in kw["rows"].items()]),
        "",
        "satisfied: fraction of returned fillings (top 5) holding every include word; chains' finals sat.: the "
        "same over the 25 chains' final states; PLL of satisfying: mean over tasks (where the row has any) of "
        "the mean PLL of the satisfying returned fillings; found any: fraction of tasks where rejection kept "
        "any filling.",
        "",
        f"On the {kw['every_row']['tasks']} tasks that ran every row:",
        "",
        *table(header, [[n, *(fmt(r[k], dg) for k, _, dg in columns)] for n, r in kw["every_row"]["rows"].items()]),
        "",
    ]
    for c in kw["against"]:
        lo, mid, hi = c["sequences_ratio"] or (None,) * 3
        tl, tm, th = c["time_ratio"] or (None,) * 3
        lines.append(
            f"- `{c['row']}` against `{c['rejection']}`: rejection found a filling on {c['found']} of "
            f"{c['tasks']} tasks; on {c['wins']} of them "
            f"({fmt(100 * c['wins'] / c['found'] if c['found'] else None, 0)}%) our "
            f"mean PLL of satisfying fillings is at least rejection's (mean gap {fmt(c['mean_gap'])}, median "
            f"{fmt(c['median_gap'])}); rejection used {fmt(mid)}x our sequences (range {fmt(lo)}-{fmt(hi)}); "
            f"our time over rejection's {fmt(tm)}x (range {fmt(tl)}-{fmt(th)})."
        )
    by_kind = kw["by_kind"]
    lines += [
        "",
        "Default row by kind of task: "
        + "; ".join(f"{k}: {fmt(v['satisfied'], 3)} satisfied over {v['tasks']} tasks" for k, v in by_kind.items())
        + ".",
        "",
    ]
    columns = [
        ("sentences", "sentences", 0),
        ("changed", "changed", 3),
        ("near", "near target", 2),
        ("found", "any variant", 2),
        ("pll_gap", "PLL - source", 2),
        ("near_pll_gap", "near: PLL - source", 2),
        ("hits", "hits/sentence", 2),
        ("sequences_per_hit", "enc. seqs per hit ↓", 0),
        ("self_bleu", "self-BLEU ↓", 1),
        ("encoder_sequences", "enc. seqs", 0),
        ("steps", "steps", 1),
        ("acceptance_rate", "accept", 2),
        ("seconds", "s", 1),
    ]
    lines += ["## Rewrite", ""]
    for change, rows in rw["rows"].items():
        lines += [
            f"### change {change}",
            "",
            *table(
                ["row", *(t for _, t, _ in columns)],
                [[n, *(fmt(r[k], dg) for k, _, dg in columns)] for n, r in rows.items()],
            ),
            "",
        ]
    lines += [
        f"changed: mean fraction of words changed over the variants; near target: changed fraction within "
        f"{TOLERANCE} of the target; PLL - source: mean over sentences of the variants' mean PLL minus the "
        "source's; hits: distinct variants at least as likely as the source (PLL) that changed at least the "
        f"target minus {TOLERANCE}; enc. seqs per hit: the row's encoder sequences over its hits, pooled over "
        "sentences.",
        "",
        "Winner (fewest encoder sequences per hit, pooled over sentences and change fractions, among the MCMC "
        f"samplers): `{rw['winner']}`.",
        "",
    ]
    return "\n".join(lines + signature_block(report["signature"]) + [""])


def write_atomically(path: Path, text: str) -> None:
    """``path`` replaced at once, so that a second process (``--keywords 0`` beside ``--rewrites 0``) never
    reads half a file."""
    part = path.with_name(f".{path.name}.{os.getpid()}")
    part.write_text(text)
    os.replace(part, path)


def task_key(record: dict) -> tuple:
    """A task's place: (part, name), ordered as the per-task files of the earlier layout were."""
    if "change" in record:
        return "rewrite", f"{record['id']}-c{record['change']:g}.json"
    return "keywords", f"{record['id']}.json"


def runs_of(out: Path) -> Rows:
    return Rows(out / "runs.jsonl", task_key)


def write_report(out: Path, model: str, chains: int, sampler_every: int) -> dict:
    records = runs_of(out).read()
    keywords = [r for r in records if task_key(r)[0] == "keywords"]
    rewrite = [r for r in records if task_key(r)[0] == "rewrite"]
    kw_rows = keyword_summary(keywords) if keywords else {}
    rw_rows = rewrite_summary(rewrite) if rewrite else {}
    by_kind = {
        k: keyword_summary([t for t in keywords if t["kind"] == k])["gibbs (default)"]
        for k in KINDS
        if any(t["kind"] == k for t in keywords)
    }
    report = {
        "keywords": {
            "tasks": len(keywords),
            "rows": kw_rows,
            "by_kind": by_kind,
            "every_row": {
                "tasks": len(with_samplers(keywords)),
                "rows": keyword_summary(with_samplers(keywords)) if with_samplers(keywords) else {},
            },
            "against": [against(keywords, "gibbs (default)", f"{m}+rejection") for m in REJECTION]
            + [
                against(keywords, s, f"{m}+rejection")
                for s in SAMPLERS
                for m in REJECTION
                if any(s in t["rows"] for t in keywords)
            ]
            if keywords
            else [],
        },
        "rewrite": {"tasks": len(rewrite), "rows": rw_rows, "winner": rewrite_winner(rewrite)},
        "signature": {
            "model": model,
            "seed": SEED,
            "top": TOP,
            "default": RunConfig().signature(),
            "rewrite_chains": chains,
            "sampler_rows_every": sampler_every,
            "tolerance": TOLERANCE,
            "torch_threads": torch.get_num_threads(),
            "corpora": "bert-gen wiki103.5k.txt, tbc.5k.txt",
            "versions": library_versions(EVAL_PACKAGES),
        },
    }
    write_atomically(out / "report.json", json.dumps(report, indent=1))
    write_atomically(out / "report.md", markdown(report))
    if keywords and rewrite:
        plot(keywords, rewrite, out)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", default="runs/constraints")
    parser.add_argument("--corpora", default=str(BERT_GEN))
    parser.add_argument("--keywords", type=int, default=KEYWORD_TASKS, help="keyword tasks (default 100; 0: none)")
    parser.add_argument("--rewrites", type=int, default=50, help="rewrite sentences (default 50; 0: none)")
    parser.add_argument("--changes", default="0.2,0.5")
    parser.add_argument("--sampler-every", type=int, default=1, help="sampler rows on every N-th keyword task")
    parser.add_argument("--rewrite-chains", type=int, default=RunConfig.num_samples)
    parser.add_argument("--shard", default="0/1", help="I/N: run every N-th job from the I-th (N processes)")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    infiller = Infiller(args.model)
    if not args.report_only:
        sentences = load_sentences(Path(args.corpora))
        keywords = keyword_tasks(Vocabulary(infiller, sentences), sentences, max(args.keywords, KEYWORD_TASKS))
        rewrites = rewrite_tasks(sentences, args.rewrites, {t["words"] for t in keywords})  # never a keyword one
        keywords = keywords[: args.keywords]  # the tasks are drawn in turn: fewer are a prefix
        changes = [float(c) for c in args.changes.split(",")]
        work = [("keywords", k, t) for k, t in enumerate(keywords)]
        jobs = [("rewrite", c, t) for t in rewrites for c in changes]
        step = max(1, len(work) // max(1, len(jobs)))
        for j, job in enumerate(jobs):  # rewrite jobs spread among keyword tasks: a partial run has both
            work.insert(min(len(work), (j + 1) * (step + 1) - 1), job)
        shard, shards = map(int, args.shard.split("/"))
        runs = runs_of(out)
        for kind, extra, spec in work[shard::shards]:
            key = task_key({"id": spec["id"], "change": extra} if kind == "rewrite" else {"id": spec["id"]})
            if key in runs.done():
                continue
            record = (
                run_keywords(infiller, spec, extra % args.sampler_every == 0)
                if kind == "keywords"
                else run_rewrite(infiller, spec, extra, args.rewrite_chains)
            )
            runs.append(record)
            write_report(out, args.model, args.rewrite_chains, args.sampler_every)
            print(f"{kind} {key[1]} done", file=sys.stderr, flush=True)
    print(markdown(write_report(out, args.model, args.rewrite_chains, args.sampler_every)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
