"""``infill score --window N`` on long texts: the seconds a token costs and how far its score moves from the
model's full window, for a few N.

    python -m scripts.bench_score_window [--model DIR] [--texts 6] [--tokens 24] [--windows 32,64,128,256]
                                         [--seed 0] [--shift 128,128]
                                         [--out eval/score-window-minilm]

The texts are consecutive lines of ``../shared/corpora/bert-gen/wiki103.5k.txt`` joined and cut to word counts
spread evenly from 500 to 1,500 (:func:`texts`; each text starts on the line after the previous one's last). In
each text ``--tokens`` positions are drawn uniformly (seeded) and scored, as :func:`infill.lm.scoring.score`
scores them (:func:`sampled`: the copy of each is the window centred on it, the text being longer than the
model), at every window and at the model's full window (``None``: 510 tokens of text for BERT): the same
positions on every side, so the differences are paired. A PLL token costs one masked copy whatever the text, so
a token's seconds are its copy's, and a text's seconds are its tokens times that. The sides run one after the
other text by text, the side that goes first rotating from text to text, on one torch thread; wall
(``time.perf_counter``) and CPU seconds (``time.process_time``) of each side's copies are recorded.

Per window against the full window: seconds per token (the median over texts of the side's seconds over its
tokens) and the ratio, the seconds a 1,500-word text would take, the mean absolute change of a token's score
(nats) and its mean (signed) change, the change of each text's PLL per token (the mean over its sampled tokens:
the total's change divided by its tokens, estimated), and the rank agreement between texts (Kendall's tau of
their PLL per token over the sampled positions, the window's order against the full window's). Writes
``OUT/README.md`` (the question, the answer and the table first, then the command) and ``OUT/results.json``;
``--report`` writes the README again from ``OUT/results.json``'s rows, measuring nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time
from itertools import combinations
from pathlib import Path

import torch

from scripts.harness import CORPORA, DEV_MODEL, ROOT, environment, log, signature

WORDS = (500, 1500)  # every text longer than the model (512 tokens): where the window applies
CORPUS = CORPORA / "wiki103.5k.txt"
FULL = "full"
WHY = (
    "**Why this default.** Every window shorter than the model's moves the scores, and on the dev MLM toward higher "
    "likelihood (the signed column): its masked-LM training used 64-token sequences (`../shared/models/README.md`), "
    "so it predicts a token about as well or better from a shorter window. The texts' order, which is what comparing texts by their score reads, "
    "agrees with the full window's at Kendall's tau 0.81 to 0.93 at every window measured, not rising with the "
    "window, beside 0.89 for the model's own noise (the last row; 20 texts, so one swapped pair moves tau by 0.01): "
    "a longer window buys no reliably better order, only less speed, and 64 moves the scores half as far again as "
    "128 for twice the speed. 128 is also the sequence length bert-base-uncased spent 90% of its pre-training at. For the scores of "
    "before on a long text, pass `--window 512` (`window=None` in Python): the model's maximum."
)


def texts(count: int, words: tuple[int, int] = WORDS, corpus: Path = CORPUS) -> list[str]:
    """``count`` texts of consecutive corpus lines, cut to word counts spread evenly over ``words``."""
    lines, at, out = corpus.read_text(encoding="utf-8").splitlines(), 0, []
    for k in range(count):
        want = round(words[0] + (words[1] - words[0]) * k / max(count - 1, 1))
        taken: list[str] = []
        while len(taken) < want:
            taken += lines[at].split()
            at += 1
        out.append(" ".join(taken[:want]))
    return out


def copies(model, tokenizer, text: str, window: int | None, positions: torch.Tensor) -> tuple:
    """The masked copies :func:`infill.lm.scoring.score` scores ``text``'s tokens ``positions`` with (0 = the
    first token after the leading special tokens) at ``window``: ``(ids (T, W), scored (T, W))``."""
    from infill.lm import scoring
    from infill.lm.models import max_length

    encoded = tokenizer(text, return_special_tokens_mask=True, verbose=False)
    ids, special = torch.tensor(encoded["input_ids"]), torch.tensor(encoded["special_tokens_mask"], dtype=torch.bool)
    head, tail = int(special.cumprod(0).sum()), int(special.flip(0).cumprod(0).sum())
    room = max_length(tokenizer, model.config) - head - tail
    size = room if window is None else min(window, room)
    limit = len(ids) if len(ids) - head - tail <= room else size + head + tail  # whole where the model takes it
    targets = positions + head
    at = scoring.windows(targets, len(ids), head, tail, limit)
    scored = torch.zeros(at.shape, dtype=torch.bool)
    scored[torch.arange(len(targets)), targets - at[:, head] + head] = True
    return ids[at], scored


@torch.no_grad()
def sampled(model, tokenizer, text: str, window: int | None, positions: torch.Tensor) -> list[float]:
    """The PLL scores :func:`infill.lm.scoring.score` gives ``text`` with ``window`` at its tokens ``positions``."""
    from infill.lm import scoring

    ids, scored = copies(model, tokenizer, text, window, positions)
    logp, _ = scoring.token_scores(model, ids, torch.ones_like(ids), scored, mask_token_id=tokenizer.mask_token_id)
    return logp[scored].tolist()


@torch.no_grad()
def shifted(model, tokenizer, text: str, window: int, positions: torch.Tensor, offset: int) -> list[float]:
    """:func:`sampled`'s scores with each copy read at positions ``offset`` on (``position_ids``): the same
    tokens, the same context, only moved along."""
    ids, scored = copies(model, tokenizer, text, window, positions)
    masked = ids.masked_fill(scored, tokenizer.mask_token_id)
    place = torch.arange(ids.shape[1]).expand_as(ids) + offset
    logits = model(input_ids=masked, position_ids=place).logits[scored]
    return torch.log_softmax(logits, -1).gather(1, ids[scored][:, None]).flatten().tolist()


def rounded(row: dict) -> dict:
    """``row`` with its scores to 5 decimals and its seconds to 4 (what the study keeps and summarises)."""
    for side in row["sides"].values():
        side.update(
            scores=[round(v, 5) for v in side["scores"]], wall=round(side["wall"], 4), cpu=round(side["cpu"], 4)
        )
    row["shifted"] = [round(v, 5) for v in row["shifted"]]
    return row


def kendall(a: list[float], b: list[float]) -> float:
    """Kendall's tau-a of two orders of the same items."""
    pairs = list(combinations(range(len(a)), 2))
    same = sum(
        1 if (a[i] - a[j]) * (b[i] - b[j]) > 0 else -1 if (a[i] - a[j]) * (b[i] - b[j]) < 0 else 0 for i, j in pairs
    )
    return same / len(pairs) if pairs else 1.0


def measure(
    model, tokenizer, corpus: list[str], windows: list[int], tokens: int, seed: int, shift: tuple[int, int]
) -> list[dict]:
    """One row a text: its token count, the sampled positions, per side the scores and seconds, and the scores
    at ``shift``'s window moved its offset along."""
    sides: list[int | None] = [*windows, None]
    rows = []
    for k, text in enumerate(corpus):
        n = len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])
        generator = torch.Generator().manual_seed(seed + k)
        positions = torch.randperm(n, generator=generator)[: min(tokens, n)].sort().values
        row = {"words": len(text.split()), "tokens": n, "positions": positions.tolist(), "sides": {}}
        for side in sides[k % len(sides) :] + sides[: k % len(sides)]:
            wall, cpu = time.perf_counter(), time.process_time()
            scores = sampled(model, tokenizer, text, side, positions)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            row["sides"][str(side or FULL)] = {"scores": scores, "wall": wall, "cpu": cpu}
        row["shifted"] = shifted(model, tokenizer, text, *shift[:1], positions, shift[1])
        rounded(row)
        log(f"text {k + 1}/{len(corpus)}: {row['words']} words, {n} tokens")
        rows.append(row)
    return rows


def summary(rows: list[dict], windows: list[int], room: int) -> dict:
    """Per side: seconds per token, against the full window's, and the score changes; ``shift``: the change of
    the shifted scores from their window's."""
    full = [row["sides"][FULL] for row in rows]
    per_token = [statistics.mean(side["scores"]) for side in full]
    longest = max(range(len(rows)), key=lambda k: rows[k]["tokens"])
    out = {}
    for side in [*map(str, windows), FULL]:
        these = [row["sides"][side] for row in rows]
        seconds = {clock: statistics.median(s[clock] / len(s["scores"]) for s in these) for clock in ("wall", "cpu")}
        ratios = {
            clock: statistics.median(f[clock] / s[clock] for f, s in zip(full, these)) for clock in ("wall", "cpu")
        }
        changes = [w - f for s, fs in zip(these, full) for w, f in zip(s["scores"], fs["scores"])]
        text_changes = [statistics.mean(s["scores"]) - p for s, p in zip(these, per_token)]
        relative = [abs(change / p) for change, p in zip(text_changes, per_token)]
        out[side] = {
            "window": room if side == FULL else min(int(side), room),
            "seconds_per_token": seconds,
            "faster_than_full": ratios,
            "seconds_longest_text": these[longest]["cpu"] / len(these[longest]["scores"]) * rows[longest]["tokens"],
            "mean_abs_change": statistics.mean(map(abs, changes)),
            "mean_change": statistics.mean(changes),
            "max_abs_change": max(map(abs, changes)),
            "mean_abs_text_change": statistics.mean(map(abs, text_changes)),
            "mean_text_change": statistics.mean(text_changes),
            "mean_text_change_percent": 100 * statistics.mean(relative),
            "kendall_tau": kendall([statistics.mean(s["scores"]) for s in these], per_token),
        }
    return out


def shift_change(rows: list[dict], shift: tuple[int, int]) -> dict:
    """How far moving ``shift``'s window its offset along moves the scores (of tokens and texts' PLL per token,
    and the texts' order): the model's own noise."""
    window, offset = shift
    moved = [row["shifted"] for row in rows]
    still = [row["sides"][str(window)]["scores"] for row in rows]
    changes = [m - w for ms, ws in zip(moved, still) for m, w in zip(ms, ws)]
    text_changes = [statistics.mean(m) - statistics.mean(w) for m, w in zip(moved, still)]
    return {
        "window": window,
        "offset": offset,
        "mean_abs_change": statistics.mean(map(abs, changes)),
        "mean_change": statistics.mean(changes),
        "mean_abs_text_change": statistics.mean(map(abs, text_changes)),
        "mean_text_change": statistics.mean(text_changes),
        "kendall_tau": kendall([statistics.mean(m) for m in moved], [statistics.mean(w) for w in still]),
    }


def report(result: dict) -> str:
    """The study's README: the question, the answer and the table, the command, then how it was measured."""
    env, summary_, rows, shift = result["environment"], result["summary"], result["rows"], result["shift"]
    default = str(result["default"])
    chosen, full = summary_.get(default), summary_[FULL]
    longest = max(rows, key=lambda row: row["tokens"])
    n = sum(len(row["positions"]) for row in rows)
    lines = [
        "# `infill score --window N` on long texts: seconds and score change against the full window",
        "",
        "**Question.** A text longer than the model is scored token by token, each token's masked copy the N "
        "tokens of the text centred on it. How much faster is each N than the model's full window (510 tokens "
        "of text), and how far does it move the scores?",
        "",
    ]
    if chosen:
        lines += [
            f"**Answer.** `--window {default}`, the default, costs {chosen['faster_than_full']['cpu']:.1f}x fewer CPU "
            f"seconds per token than the full window ({chosen['seconds_per_token']['cpu'] * 1000:.0f} ms against "
            f"{full['seconds_per_token']['cpu'] * 1000:.0f} ms on one thread: "
            f"{chosen['seconds_longest_text'] / 60:.1f} minutes for a {longest['words']:,}-word text of "
            f"{longest['tokens']:,} tokens, against {full['seconds_longest_text'] / 60:.1f}). It moves a text's PLL "
            f"per token by {chosen['mean_abs_text_change']:.3f} nats on average "
            f"({chosen['mean_text_change_percent']:.1f}% of it; {chosen['mean_text_change']:+.3f} signed), and the "
            f"texts' order by it agrees with the full window's at Kendall's tau {chosen['kendall_tau']:.2f}; the "
            f"model's own noise, the same windows only read {shift['offset']} positions further along, gives tau "
            f"{shift['kendall_tau']:.2f} and {shift['mean_abs_text_change']:.3f} nats. "
            "A text the model takes (510 tokens of text for BERT) is scored whole whatever the window, exactly as "
            "before and as minicons scores it: the window reaches only longer texts.",
            "",
            WHY,
            "",
        ]
    lines += [
        "| window (tokens of text) | CPU ms per token | x fewer CPU s than full | x fewer wall s | "
        f"minutes, {longest['words']:,} words | change of a text's PLL per token (mean abs, nats) | "
        "the same, % | the same, signed | change of a token's score (mean abs) | Kendall's tau between texts |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for side, s in summary_.items():
        name = f"{s['window']} (full)" if side == FULL else f"**{side}** (default)" if side == default else side
        lines.append(
            f"| {name} | {s['seconds_per_token']['cpu'] * 1000:.0f} | {s['faster_than_full']['cpu']:.1f} | "
            f"{s['faster_than_full']['wall']:.1f} | {s['seconds_longest_text'] / 60:.1f} | "
            f"{s['mean_abs_text_change']:.3f} | {s['mean_text_change_percent']:.1f} | {s['mean_text_change']:+.3f} | "
            f"{s['mean_abs_change']:.3f} | {s['kendall_tau']:.2f} |"
        )
    lines += [
        f"| {shift['window']}, read {shift['offset']} positions along | | | | | {shift['mean_abs_text_change']:.3f} "
        f"| | {shift['mean_text_change']:+.3f} | {shift['mean_abs_change']:.3f} | {shift['kendall_tau']:.2f} |",
    ]
    words = sorted({row["words"] for row in rows})
    lines += [
        "",
        f"The last row is the model's own noise, against the `{shift['window']}` row: the same copies, tokens and "
        f"context unchanged, read {shift['offset']} positions further along (`position_ids`).",
        "",
        "```console",
        f"python -m scripts.bench_score_window {result['command']}",
        "```",
        "",
        f"({result['minutes']:.1f} minutes here; `--report` writes this page again from `results.json`'s rows.)",
        "",
        f"- Texts: {len(rows)} of {words[0]:,} to {words[-1]:,} words ({min(r['tokens'] for r in rows):,} to "
        f"{max(r['tokens'] for r in rows):,} tokens), consecutive lines of "
        "`../shared/corpora/bert-gen/wiki103.5k.txt` from its first, each text starting on the line after the "
        f"previous one's last, cut to its word count; in each, {result['tokens']} token positions drawn uniformly "
        f"(seed {result['seed']}), {n} in all, the same on every side.",
        "- A token's score on a side is what `infill score --window N` gives it (`sampled` in the script, tested "
        "equal to `infill.lm.scoring.score`): the window centred on it, every text being longer than the model "
        "(510 tokens of text).",
        "- Seconds: each side's copies of a text's sampled tokens, timed one after the other in one process, the "
        "first side rotating from text to text; the median over texts of seconds per token, and the median of "
        "the per-text ratios. A token costs one masked copy of the window's width, so a text's seconds are its "
        "tokens times that (the minutes column: the longest text's CPU seconds per token times its tokens). CPU seconds are the figure to compare: "
        "the machine is shared, and wall time includes the waits for a core.",
        "- Score change: each sampled token's score minus its full-window score (nats); a text's PLL per token "
        "is the mean over its sampled tokens (its total's change over its tokens, estimated), and its change in % "
        "of the full window's; Kendall's tau (tau-a) of the texts ordered by it, against the full window's order.",
        f"- {signature(env)}; {result['date']}.",
        "- Before this option every long text was scored at the full window: "
        "[eval/score-long-minilm/](../score-long-minilm/README.md) measured 2,276 tokens of a 2,000-word "
        "text at 1,104 CPU seconds of user time, about 0.5 s a token, with torch's default threads on the same "
        "loaded 2-core machine (the 510 row here: one thread).",
        "",
    ]
    return "\n".join(lines)


def dump(result: dict) -> str:
    """``result`` as JSON, a text's row a line."""
    head = json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1)
    rows = ",\n".join(json.dumps(row) for row in result["rows"])
    return f'{head[:-2]},\n "rows": [\n{rows}\n ]\n}}\n'


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(DEV_MODEL))
    parser.add_argument("--texts", type=int, default=6, help="texts of 500 to 1,500 words (6)")
    parser.add_argument("--tokens", type=int, default=24, help="token positions sampled per text (24)")
    parser.add_argument("--windows", default="32,64,128,256", help="window sizes besides the full one")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shift", default="128,128", help="WINDOW,OFFSET: the noise row, WINDOW's copies moved along")
    parser.add_argument("--out", type=Path, default=ROOT / "eval" / "score-window-minilm")
    parser.add_argument("--report", action="store_true", help="rewrite OUT/README.md from OUT/results.json's rows")
    args = parser.parse_args(argv)
    if args.report:
        from infill.lm.scoring import WINDOW

        result = {**json.loads((args.out / "results.json").read_text()), "default": WINDOW}
        result["rows"] = [rounded(row) for row in result["rows"]]
        windows = [int(side) for side in result["summary"] if side != FULL]
        room, shift = result["summary"][FULL]["window"], (result["shift"]["window"], result["shift"]["offset"])
        result.update(summary=summary(result["rows"], windows, room), shift=shift_change(result["rows"], shift))
        (args.out / "results.json").write_text(dump(result))
        (args.out / "README.md").write_text(report(result))
        return
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from infill.lm.models import max_length
    from infill.lm.scoring import WINDOW

    torch.set_num_threads(1)
    model = AutoModelForMaskedLM.from_pretrained(args.model).eval()
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    windows = [int(w) for w in args.windows.split(",")]
    corpus = texts(args.texts)
    sampled(model, tokenizer, corpus[0][:200], None, torch.arange(4))  # warm-up
    shift = tuple(int(v) for v in args.shift.split(","))
    if shift[0] not in windows:
        parser.error("--shift's window must be one of --windows")
    started = time.perf_counter()
    rows = measure(model, tokenizer, corpus, windows, args.tokens, args.seed, shift)
    room = max_length(tokenizer, model.config) - tokenizer.num_special_tokens_to_add()
    command = f"--texts {args.texts} --tokens {args.tokens} --windows {args.windows} --seed {args.seed}"
    command += f" --shift {args.shift}"
    if args.model != str(DEV_MODEL):
        command += f" --model {args.model}"
    result = {
        "question": "seconds per token and score change of --window N against the model's full window",
        "command": command,
        "date": datetime.date.today().isoformat(),
        "environment": environment(model=Path(args.model).name),
        "default": WINDOW,
        "tokens": args.tokens,
        "seed": args.seed,
        "minutes": round((time.perf_counter() - started) / 60, 1),
        "summary": summary(rows, windows, room),
        "shift": shift_change(rows, shift),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(dump(result))
    (args.out / "README.md").write_text(report(result))
    print(report(result))


if __name__ == "__main__":
    main()
