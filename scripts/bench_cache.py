"""The cache of conditionals on against off: the default's wall at the same budget, and where each side spends it.

    python -m scripts.bench_cache [--model DIR] [--layers N] [--blanks 2,3,4,6,8] [--templates 2] [--rounds 2]
                                  [--profile BLANKS] [--out eval/cache-minilm]

The templates are :func:`scripts.bench_host.templates` (wiki103 sentences, blanks at evenly spread words).
The default, ``Infiller(model).sample(template, top=5, seed=0)`` (method ``auto``), runs with the cache
(``cache_mib`` at its default) and without (``Infiller(model, cache_mib=0)``), one after the other, template by
template, the side that goes first alternating from template to template and from round to round, on one torch
thread. Both spend the same budget of encoder sequences, so they may buy different work (the cache makes a
sequence it holds free): each side's encoder sequences, cache hits, candidates and top-5 mean PLL are
recorded beside its wall and its CPU seconds (``time.process_time``: on a shared machine, what the run itself
computed, without the waits for a core), and those are split into the encoder's (``model.base_model``'s
forward: the thread's CPU seconds between hooks, torch running on the one thread) and the rest (the host's).
Reported per blank count and over every template: the median and range of on/off ratios per (template, round),
and on how many templates the median wall (and CPU) ratio is above 1.

``--model`` is the dev MLM by default; ``--layers N`` cuts it to its first ``N`` layers (a fast encoder, as a
GPU's is: :func:`scripts.bench_host.fast_encoder`). ``--profile B`` writes instead a cProfile of each side on
the first template of ``B`` blanks (after a warm-up run), its top functions by own and by cumulative time, to
``OUT/profile-B.txt``. Writes ``OUT/report.json`` and ``OUT/report.md`` with the CPU model, the library versions
and the commit; the target is on/off at most 1.0 by the median over templates, and never above it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from scripts.bench_host import fast_encoder, templates
from scripts.harness import DEV_MODEL, ROOT, environment, log, signature

TOP = 5
SIDES = ("on", "off")


class Sides:
    """The default with the cache and without, on one model; a hook times the encoder's passes."""

    def __init__(self, model: str, layers: int | None):
        from infill import Infiller

        self.on = Infiller(model)
        if layers:
            self.on = Infiller(fast_encoder(model, layers), tokenizer=self.on.tokenizer)
        self.off = Infiller(self.on.model, tokenizer=self.on.tokenizer, cache_mib=0)
        self.encoder_cpu, self._started = 0.0, 0.0
        encoder = self.on.model.base_model
        encoder.register_forward_pre_hook(lambda *_: self._start())
        encoder.register_forward_hook(lambda *_: self._stop(), always_call=True)

    def _start(self):
        self._started = time.thread_time()

    def _stop(self):
        self.encoder_cpu += time.thread_time() - self._started

    def run(self, side: str, text: str) -> dict:
        """One default run of ``side`` on ``text``: its wall and CPU seconds (the encoder's and the rest), its
        compute and top-5 mean PLL."""
        self.encoder_cpu = 0.0
        start, cpu = time.perf_counter(), time.process_time()
        result = (self.on if side == "on" else self.off).sample(text, top=TOP, seed=0)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        d = result.diagnostics
        return {
            "wall": wall,
            "cpu": cpu,
            "encoder_cpu": self.encoder_cpu,
            "host_cpu": cpu - self.encoder_cpu,
            "sampler": d.sampler,
            "sequences": d.encoder_sequences,
            "cache_hits": d.cache_hits,
            "candidates": d.candidates,
            "top5_pll": statistics.fmean(float(s.energy) for s in result.samples),
            "texts": result.texts,
        }


def rounds(sides: Sides, texts: list[str], count: int) -> list[dict]:
    """Each template's two sides in turn, ``count`` rounds (module docstring), after a warm-up run of each."""
    for text in texts[:1]:
        for side in SIDES:
            sides.run(side, text)
    rows = []
    for r in range(count):
        for i, text in enumerate(texts):
            order = SIDES if (i + r) % 2 == 0 else SIDES[::-1]
            row = {"template": text, "blanks": text.count("[MASK]"), "round": r, "first": order[0]}
            row |= {side: sides.run(side, text) for side in order}
            rows.append(row)
            on, off = row["on"], row["off"]
            log(
                f"{row['blanks']} blanks, {on['sampler']}: on/off wall {on['wall'] / off['wall']:.3f}, "
                f"cpu {on['cpu'] / off['cpu']:.3f}, sequences {on['sequences']}/{off['sequences']}, "
                f"host cpu s {on['host_cpu']:.2f}/{off['host_cpu']:.2f}"
            )
    return rows


def spread(values: list[float]) -> dict | None:
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


RATIOS = {
    "wall": lambda on, off: on["wall"] / off["wall"],
    "cpu": lambda on, off: on["cpu"] / off["cpu"],
    "encoder_cpu": lambda on, off: on["encoder_cpu"] / off["encoder_cpu"],
    "host_cpu": lambda on, off: on["host_cpu"] / off["host_cpu"],
    "sequences": lambda on, off: on["sequences"] / off["sequences"],
    "candidates": lambda on, off: on["candidates"] / off["candidates"],
    "encoder_cpu_per_sequence": lambda on, off: (
        (on["encoder_cpu"] / on["sequences"]) / (off["encoder_cpu"] / off["sequences"])
    ),
}
"""The on/off ratios reported, each from one (template, round)'s two runs."""


def summarize(rows: list[dict]) -> dict:
    """The ratios' spreads and the top-5 PLL difference, per blank count and over all; templates slower on."""
    groups = {"all": rows} | {
        str(b): [r for r in rows if r["blanks"] == b] for b in sorted({r["blanks"] for r in rows})
    }
    out = {}
    for name, group in groups.items():
        out[name] = {key: spread([ratio(r["on"], r["off"]) for r in group]) for key, ratio in RATIOS.items()}
        for key in ("wall", "cpu"):  # each template's median over its rounds
            by_template: dict[str, list[float]] = {}
            for r in group:
                by_template.setdefault(r["template"], []).append(RATIOS[key](r["on"], r["off"]))
            medians = [statistics.median(v) for v in by_template.values()]
            out[name] |= {f"{key}_by_template": spread(medians), f"templates_slower_{key}": sum(m > 1 for m in medians)}
        out[name] |= {
            "samplers": sorted({r["on"]["sampler"] for r in group}),
            "templates": len({r["template"] for r in group}),
            "top5_pll_on_minus_off": spread([r["on"]["top5_pll"] - r["off"]["top5_pll"] for r in group]),
            "same_top5": sum(r["on"]["texts"] == r["off"]["texts"] for r in group),
            "rows": len(group),
        }
    return out


def _cell(s: dict | None, digits: int = 2) -> str:
    if s is None:
        return "-"
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}-{s['max']:.{digits}f})"


def markdown(r: dict) -> str:
    a, s = r["settings"], r["summary"]
    lines = "\n".join(
        f"| {name} | {', '.join(g['samplers'])} | {g['templates_slower_wall']}, {g['templates_slower_cpu']} of "
        f"{g['templates']} | {_cell(g['wall_by_template'])} | {_cell(g['cpu_by_template'])} | "
        f"{_cell(g['encoder_cpu'])} | {_cell(g['host_cpu'])} | {_cell(g['sequences'])} | "
        f"{_cell(g['encoder_cpu_per_sequence'])} | {_cell(g['candidates'])} | "
        f"{_cell(g['top5_pll_on_minus_off'], 3)} | {g['same_top5']} of {g['rows']} |"
        for name, g in s.items()
    )
    return f"""# The cache of conditionals on against off: the default at the same budget

Generated by `{r["command"]}` (the protocol is the module's docstring), {r["date"]}.
{signature(r["environment"])}.

Model `{a["model"]}`{f", cut to its first {a['layers']} layers" if a["layers"] else ""}; {a["templates"]} template(s) a
blank count, {a["rounds"]} round(s), the sides in turn. On/off ratios, median (min-max): the wall and the CPU
seconds by each template's median over its rounds (the target: above 1 on no template, at most 1.0 by the median
over templates), the rest over (template, round). Encoder CPU: the CPU seconds inside `model.base_model`'s forward;
host CPU: the rest of the run's.

| blank tokens | run | templates slower on (wall, CPU) | wall | CPU | encoder CPU | host CPU | encoder sequences | encoder CPU / sequence | candidates | top-5 mean PLL on - off | same top 5 |
|---|---|---|---|---|---|---|---|---|---|---|---|
{lines}
"""


def profile(sides: Sides, text: str, top: int) -> str:
    """cProfile of each side on ``text`` after a warm-up run: its ``top`` functions by own and cumulative time."""
    import cProfile
    import io
    import pstats

    out = io.StringIO()
    for side in SIDES:
        sides.run(side, text)
        profiler = cProfile.Profile()
        row = profiler.runcall(sides.run, side, text)
        out.write(f"== cache {side}: {row['sampler']}, {row['sequences']} encoder sequences, {text}\n")
        for key in ("tottime", "cumulative"):
            pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(top)
    return out.getvalue().replace(str(Path(torch.__file__).parents[1]) + "/", "").replace(str(ROOT) + "/", "")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(DEV_MODEL), help="a masked-LM checkpoint (default the dev MLM)")
    parser.add_argument("--layers", type=int, help="cut the model to its first N layers (a fast encoder)")
    parser.add_argument("--blanks", default="2,3,4,6,8", help="blank counts, comma-separated (default 2,3,4,6,8)")
    parser.add_argument("--templates", type=int, default=2, help="templates a blank count (default 2)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds (default 2)")
    parser.add_argument("--profile", type=int, metavar="BLANKS", help="instead: cProfile each side on one template")
    parser.add_argument("--out", type=Path, default=ROOT / "eval" / "cache-minilm")
    args = parser.parse_args(argv)
    try:
        blanks = sorted({int(b) for b in args.blanks.split(",")})
    except ValueError:
        parser.error(f"--blanks takes comma-separated integers, not {args.blanks!r}")
    if min(blanks) < 1 or args.templates < 1 or args.rounds < 1 or (args.layers is not None and args.layers < 1):
        parser.error("--blanks, --templates, --rounds and --layers must be positive")
    torch.set_num_threads(1)
    sides = Sides(args.model, args.layers)
    limit = sides.on.max_length
    args.out.mkdir(parents=True, exist_ok=True)
    if args.profile:
        text = profile(sides, templates(sides.on.tokenizer, args.profile, 1, limit)[0], 30)
        (args.out / f"profile-{args.profile}.txt").write_text(text)
        return 0
    texts = [t for b in blanks for t in templates(sides.on.tokenizer, b, args.templates, limit)]
    rows = rounds(sides, texts, args.rounds)
    report = {
        "command": " ".join(["python -m scripts.bench_cache", *(sys.argv[1:] if argv is None else map(str, argv))]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "environment": environment(),
        "settings": {**vars(args), "model": Path(args.model).name, "out": str(args.out), "blanks": blanks},
        "summary": summarize(rows),
        "rows": rows,
    }
    (args.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "report.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
