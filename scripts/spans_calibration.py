"""Calibrate the span energy: which score, and which per-word bonus, picks the length of a removed span.

Tasks: sentences of the calibration split of a bert-gen corpus (even-numbered lines; the benchmark uses
another split), 8-20 words, with 1-4 consecutive words (uniformly many, any pieces) replaced by ``[MASK*?]``.
Candidates per task: ``--draws`` left-to-right draws of the masked LM at every length 1-4 words (one-piece
words). Each candidate is scored once per scoring (PLL, PLL-word-l2r: one masked copy per token), and every
window form is a sum over a subset of those token scores. A form with bonus ``b`` picks the candidate of highest
``score + b * words``; its length is compared with the removed span's. The bonus is chosen on half the tasks
and measured on the other half (2-fold), so the numbers reported are held out. Then the sampler itself
(:func:`infill.spans.sample_spans`, both methods at equal chains) runs with the chosen form and bonus on the first
``--sampler-tasks`` tasks, and the length of its top filling is measured the same way.

    python -m scripts.spans_calibration --model ../shared/models/infill-dev-minilm-mlm
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path

import torch

from scripts.harness import versions as harness_versions

FORMS = [(scoring, window) for scoring in ("pll", "word-l2r") for window in (None, 0, 1, 2, 4)]
BONUSES = [round(0.25 * i, 2) for i in range(-8, 33)]  # -2 .. 8 nats per word
WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9'.-]*$")


def tasks_from(corpus: Path, count: int, seed: int) -> list[tuple[str, str, int]]:
    """``(template, removed words, word count)`` for ``count`` sentences of the even-numbered lines."""
    lines = corpus.read_text(encoding="utf-8").splitlines()[::2]
    usable = [
        line.split() for line in lines if "@" not in line and "<unk>" not in line and 8 <= len(line.split()) <= 20
    ]
    rng = random.Random(seed)
    out = []
    for words in rng.sample(usable, len(usable)):
        n = rng.randint(1, 4)
        starts = [i for i in range(len(words) - n + 1) if all(WORD.match(w) for w in words[i : i + n])]
        if not starts:
            continue
        i = rng.choice(starts)
        out.append((" ".join(words[:i] + ["[MASK*?]"] + words[i + n :]), " ".join(words[i : i + n]), n))
        if len(out) == count:
            return out
    raise SystemExit(f"only {len(out)} tasks in {corpus}")


def candidate_scores(model, tokenizer, text: str, categories, draws: int, generator) -> dict:
    """Lengths ``(N,)`` of the candidates and, per form, their scores ``(N,)`` and the copies they cost."""
    from infill.lm.scoring import token_scores
    from infill.spans.fills import SpanSpace
    from infill.spans.sample import draw_starts, span_energy, span_space
    from infill.text.template import parse

    template = parse(text, tokenizer, 512, blank_unit="word")
    space = span_space(template, tokenizer, categories, 4 * draws)
    lengths = torch.arange(1, 5).repeat_interleave(draws)[:, None]
    space = SpanSpace(space.allowed, space.starts, space.pieces, lengths, lengths)
    energy = span_energy(model, tokenizer, template, categories, space)
    fills = draw_starts(energy, space, lengths, "left-to-right", generator)
    ids, attention, everything, starts, _ = energy.layout(fills)
    out = {
        "words": lengths[:, 0].tolist(),
        "fills": [tokenizer.decode(categories[chain[0]].tolist()) for chain in fills.to_lists()],
    }
    for scoring in ("pll", "word-l2r"):
        scores, _ = token_scores(
            model,
            ids,
            attention.long(),
            everything,
            word_l2r=scoring == "word-l2r",
            word_starts=starts,
            mask_token_id=tokenizer.mask_token_id,
        )
        for window in (None, 0, 1, 2, 4):
            scored = span_energy(model, tokenizer, template, categories, space, window=window).layout(fills)[2]
            out[f"{scoring}|{window}"] = ((scores * scored).sum(1).tolist(), scored.sum(1).float().mean().item())
    return out


def choose(rows: list[dict], key: str, bonus: float) -> list[int]:
    """The number of words of the best candidate of each task under form ``key`` with ``bonus``."""
    chosen = []
    for row in rows:
        values = [s + bonus * n for s, n in zip(row[key][0], row["words"])]
        chosen.append(row["words"][max(range(len(values)), key=values.__getitem__)])
    return chosen


def rates(rows: list[dict], chosen: list[int]) -> tuple[float, float]:
    """Exact-length rate and mean |length error| in words."""
    errors = [abs(c - row["true"]) for c, row in zip(chosen, rows)]
    return sum(e == 0 for e in errors) / len(rows), sum(errors) / len(rows)


def fitted(rows: list[dict], key: str) -> float:
    """The bonus of highest exact-length rate on ``rows`` (then lowest error, then smallest |bonus|)."""

    def quality(bonus: float) -> tuple[float, float, float]:
        exact, error = rates(rows, choose(rows, key, bonus))
        return exact, -error, -abs(bonus)

    return max(BONUSES, key=quality)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="../shared/models/infill-dev-minilm-mlm")
    parser.add_argument("--corpus", default="../shared/corpora/bert-gen/wiki103.5k.txt")
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sampler-tasks", type=int, default=20)
    parser.add_argument("--chains", type=int, default=12)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--reuse", action="store_true", help="read the scored candidates from the .json of --out")
    parser.add_argument("--out", default="eval/spans-calibration/spans-calibration.md")
    args = parser.parse_args()
    from infill.lm.models import load
    from infill.text.vocabulary import word_piece_ids

    model, tokenizer = load(args.model)
    categories = word_piece_ids(tokenizer)
    generator = torch.Generator().manual_seed(args.seed)
    if args.reuse:
        saved = json.loads(Path(args.out).with_suffix(".json").read_text(encoding="utf-8"))
        rows, seconds = saved["rows"], saved["seconds"]
    else:
        begin, rows = time.perf_counter(), []
        for text, removed, n in tasks_from(Path(args.corpus), args.tasks, args.seed):
            with torch.no_grad():
                rows.append(
                    {
                        "template": text,
                        "removed": removed,
                        "true": n,
                        **candidate_scores(model, tokenizer, text, categories, args.draws, generator),
                    }
                )
        seconds = time.perf_counter() - begin
    halves = (rows[::2], rows[1::2])
    table = []
    for scoring, window in FORMS:
        key = f"{scoring}|{window}"
        held_out = [choose(test, key, fitted(fit, key)) for fit, test in (halves, halves[::-1])]
        exact, error = rates(halves[1] + halves[0], held_out[0] + held_out[1])
        bonus = fitted(rows, key)
        table.append(
            (
                scoring,
                "sentence" if window is None else f"window {window}",
                fitted(halves[0], key),
                fitted(halves[1], key),
                exact,
                error,
                bonus,
                *rates(rows, choose(rows, key, bonus)),
                *rates(rows, choose(rows, key, 0.0)),
                sum(r[key][1] for r in rows) / len(rows),
            )
        )
    fixed = [(n, *rates(rows, [n] * len(rows))) for n in range(1, 5)]
    leader = max(table, key=lambda r: (round(r[4], 2), -round(r[5], 2), -r[-1]))  # held out, error, fewer copies
    twin = next(r for r in table if r[1] == leader[1] and r[0] != leader[0])  # the other scoring, same window
    options = [
        {"scoring": r[0], "window": None if r[1] == "sentence" else int(r[1].split()[1]), "word_bonus": r[6]}
        for r in (leader, twin)
    ]
    runs = [
        sampler_run(model, tokenizer, categories, rows[: args.sampler_tasks], method, option, args)
        for method, option in (("rjmcmc", options[0]), ("rjmcmc", options[1]), ("per-length", options[0]))
    ]
    write(Path(args.out), args, rows, table, fixed, seconds, runs)


def sampler_run(model, tokenizer, categories, rows: list[dict], method: str, options: dict, args) -> dict:
    """Exact-length rate, mean |length error|, share with a word of several pieces, encoder sequences and
    seconds per task of the top filling of :func:`sample_spans` (per-length: a quarter of the chains at each of
    the 4 lengths)."""
    from infill.spans import best, sample_spans
    from infill.text.template import parse
    from infill.text.vocabulary import piece_kinds

    generator = torch.Generator().manual_seed(args.seed)
    chosen, several, sequences, begin = [], 0, 0, time.perf_counter()
    for row in rows:
        template = parse(row["template"], tokenizer, 512, blank_unit="word")
        chains = args.chains if method == "rjmcmc" else args.chains // 4
        run, trace = sample_spans(
            model, tokenizer, template, categories, chains, args.steps, generator, method=method, **options
        )
        pieces = run.sampler.fills(best(trace, 1)[0]).pieces(categories)[0][0]
        chosen.append(int(piece_kinds(tokenizer, torch.tensor(pieces, dtype=torch.long))[0].sum()))
        several += len(pieces) > chosen[-1]
        sequences += run.energy.encoder_sequences
    exact, error = rates(rows, chosen)
    return {
        "method": method,
        "energy": run.target.name,
        "exact": exact,
        "error": error,
        "several": several / len(rows),
        "sequences": sequences / len(rows),
        "seconds": (time.perf_counter() - begin) / len(rows),
    }


def write(path: Path, args, rows, table, fixed, seconds: float, runs: list[dict]) -> None:
    counts = [sum(r["true"] == n for r in rows) for n in range(1, 5)]
    versions = harness_versions()
    lines = [
        "# Span energy calibration",
        "",
        f"`python -m scripts.spans_calibration --model {args.model} --corpus {args.corpus} --tasks {args.tasks} "
        f"--draws {args.draws} --seed {args.seed} --sampler-tasks {args.sampler_tasks} --chains {args.chains} "
        f"--steps {args.steps}` (candidates scored in {seconds:.0f} s on the shared CPU; "
        f"{versions}).",
        "",
        f"{len(rows)} tasks from the even-numbered lines of `{Path(args.corpus).name}` (the calibration split: "
        f"the benchmark must use the odd-numbered lines or tbc.5k), 8-20 words, 1-4 consecutive words removed "
        f"and marked `[MASK*?]` (removed spans of 1, 2, 3, 4 words: {', '.join(map(str, counts))}). Candidates: "
        f"{args.draws} left-to-right draws of the masked LM at each length 1-4 words. A form picks the candidate "
        "of highest `score + bonus * words`. Held out: the bonus fitted on one half of the tasks (grid -2..8 "
        "by 0.25, highest exact-length rate) and measured on the other, both ways. Copies: masked copies per "
        "candidate sentence (encoder sequences of one energy evaluation).",
        "",
        "| scoring | scored tokens | bonus fitted (halves) | held-out exact | held-out mean abs err | bonus (all) "
        "| exact (all) | err (all) | exact at bonus 0 | err at bonus 0 | copies |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s, w, b1, b2, exact, error, bonus, e_all, err_all, e0, err0, copies in table:
        lines.append(
            f"| {s} | {w} | {b1:g}, {b2:g} | {exact:.2f} | {error:.2f} | {bonus:g} | {e_all:.2f} | "
            f"{err_all:.2f} | {e0:.2f} | {err0:.2f} | {copies:.1f} |"
        )
    lines += [
        "",
        "Fixed lengths: " + "; ".join(f"{n} words: exact {e:.2f}, error {err:.2f}" for n, e, err in fixed),
        "",
        f"The sampler with the leading form (highest held-out exact-length rate, then lowest error, then "
        f"fewest copies) and with the other scoring on the same tokens (each with its bonus fitted on all "
        f"tasks), on the first "
        f"{len(rows[: args.sampler_tasks])} tasks ({args.chains} chains, {args.steps} steps, top filling by "
        "energy among the visited states; several pieces: top fillings with a word of several pieces):",
        "",
        "| method | energy | exact | mean abs err | several pieces | encoder sequences per task | seconds per task |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['method']} | {r['energy']} | {r['exact']:.2f} | {r['error']:.2f} | {r['several']:.2f} | "
        f"{r['sequences']:.0f} | {r['seconds']:.1f} |"
        for r in runs
    ]
    lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path.with_suffix(".json").write_text(
        json.dumps({"seconds": seconds, "rows": rows}, indent=0) + "\n", encoding="utf-8"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
