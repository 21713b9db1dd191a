"""The default path against a bare forward, batching, the cache and bfloat16, as ratios in one run.

    python -m scripts.bench_gpu --proxy                       # CPU proxy: 2-layer 128-wide random BERT
    python -m scripts.bench_gpu                               # the dev MLM on the CPU
    python -m scripts.bench_gpu --device cuda --model PATH    # on a GPU (a float16 checkpoint is widened)
    python -m scripts.bench_gpu --proxy --profile 25          # where one default call's time goes
    python -m scripts.bench_gpu --proxy --host-ops            # the host ops the issue counted, per template
    python -m scripts.bench_gpu --device cuda --augment 200   # augmentation against nlpaug on the same card

Templates come from ``corpora/calibration/check.jsonl`` (regimes "2-4" and "6-10", taken in turn). One
process; the two sides of every ratio run one after the other, template by template (A, B, A, B...), and each
ratio is reported as its median with its range over templates (and repeats):

- ``default``: ``Infiller.sample(template, top=5, seed=s)`` (method ``auto``), its sequences per second
  (``encoder_sequences`` / wall) over a *bare forward*'s, ``model.base_model(input_ids=...)`` plus the
  prediction head at the masked slot over the categories only (:func:`infill.lm.models.category_head`: what the
  energy's passes compute), on sequences of the template's shape
  (its blanks filled with random tokens, one masked) at passes of 64 and 512 sequences; the one the energy
  uses on the device (:data:`infill.energies.masked_lm.PASS_SEQUENCES`) carries the target. Beside it, the
  same against ``model(input_ids=...)`` (the head at every position) at that pass size;
- ``host``: the default's wall per encoder sequence over a bare forward of exactly the passes it made, the
  head at as many slots as each read (recorded by a hook on the encoder and by the energy's category head):
  what the run adds to the model's own work. Beside it, the same against a bare forward whose head runs over
  the whole vocabulary before the categories' columns are taken (the energy's head as it was before);
- ``batch``: ``Infiller.sample_many(templates, top=5, seed=0)`` over the bare forward at the pass size, on
  those templates' shapes (``--batch-repeats`` times);
- ``cache``: the default's wall with the cache of conditionals on over off (``Infiller(cache_mib=0)``): at the
  same budget, so the two sides may buy different work; and for runs of chains at the same work, both sides
  running the steps the cached run took (no budget to stop them), their fillings compared;
- ``bfloat16``: ``Infiller(dtype="bfloat16")`` against float32 where the device has native bfloat16 (on a CPU,
  ``avx512_bf16`` or ``amx_bf16`` in /proc/cpuinfo), else skipped with the reason;
- ``gpu busy`` (CUDA only): the sum of CUDA kernel time over the wall of one more batch call under
  ``torch.profiler``.

Each row also records the share of the cores other processes kept busy meanwhile (/proc/stat); rows that left
every thread of the run a core of its own (within ``--slack`` of a core) are summarized apart as *quiet*. On a
shared CPU ``--threads 1`` keeps the ratios meaningful: with more threads than free cores every op waits at its
thread barrier. ``--bf16 on`` runs the bfloat16 pair where it is emulated too (to try the path). Writes
``OUT.json`` and ``OUT.md`` (default ``eval/bench-gpu/<device>-<proxy|devmlm>``); ``--markdown-only``
re-summarizes a written ``OUT.json``; ``--profile N`` writes instead a cProfile of one default call per regime;
``--host-ops`` counts instead the host ops the issue counted (scalar reads, selects, clones, logsumexp calls).
``--augment N`` runs instead :mod:`scripts.bench_augment` on ``--device``: ``infill.augment`` (scored and
``--no-pll``) against nlpaug's ``ContextualWordEmbsAug`` on the same model and card, N check sentences, sentences a
second within each chunk, to ``eval/bench-gpu/<device>-augment/check.jsonl`` with its summary printed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import transformers
from transformers import AutoTokenizer

from scripts.harness import DEV_MODEL, ROOT, cpu_model, load_model

SUITE = ROOT / "corpora" / "calibration" / "check.jsonl"
SIZES = (64, 512)
TARGETS = {  # key -> (comparison, bound, where the issue sets it)
    "default_over_bare": (">=", 0.5, "cuda"),
    "batch_over_bare": (">=", 0.7, "cuda"),
    "gpu_busy": (">=", 0.6, "cuda"),
    "cache_on_over_off": ("<=", 1.0, "any"),
    "bf16_same_top5": (">=", 0.9, "native bf16"),
    "bf16_over_float32": ("<=", 0.6, "native bf16"),
    "host_over_same_passes": ("<=", 2.0, "cpu proxy"),
}


def load(args, tokenizer):
    """The proxy (random weights, seed 0) or the checkpoint at ``args.model`` in float32 (the chains run in
    float32 unless bfloat16 is asked for), on the device."""
    return load_model("proxy" if args.proxy else args.model, args.device, tokenizer.vocab_size)


def templates(count: int) -> list[str]:
    """``count`` check templates, the 2-4 and 6-10 regimes in turn (all of them at most)."""
    rows = [json.loads(line) for line in SUITE.read_text().splitlines()]
    regimes = [[r["template"] for r in rows if r["regime"] == g] for g in ("2-4", "6-10")]
    mixed = [t for pair in zip(*regimes) for t in pair] + [t for g in regimes for t in g[min(map(len, regimes)) :]]
    return mixed[:count]


def native_bf16(device: str) -> tuple[bool, str]:
    """Whether ``device`` has native bfloat16, and what says so."""
    if device.startswith("cuda"):
        ok = torch.cuda.is_bf16_supported(including_emulation=False)
        return ok, f"{torch.cuda.get_device_name()} {'has' if ok else 'lacks'} native bfloat16"
    flags = {
        f
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if line.startswith("flags")
        for f in line.split(":", 1)[1].split()
    }
    found = sorted(flags & {"avx512_bf16", "amx_bf16"})
    return bool(found), (
        f"the CPU has {', '.join(found)}"
        if found
        else "the CPU has neither avx512_bf16 nor amx_bf16 (/proc/cpuinfo): bfloat16 is emulated"
    )


def cpu_seconds() -> tuple[float, float]:
    """(CPU seconds all cores have been busy, stolen time included; CPU seconds of this process), so far."""
    user, nice, system, idle, iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
    own = os.times()
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK"), own.user + own.system


def others(fn, *args):
    """``fn(*args)`` (a row dict) with ``others_cpu``: the share of the machine's cores that other processes
    kept busy meanwhile (the machine may be shared)."""
    (busy, own), start = cpu_seconds(), time.perf_counter()
    row = fn(*args)
    (busy2, own2), wall = cpu_seconds(), time.perf_counter() - start
    row["others_cpu"] = round(max(0.0, (busy2 - busy) - (own2 - own)) / (wall * os.cpu_count()), 3)
    return row


class Bench:
    """The model, its Infillers and the timers; a hook on the encoder records each pass's (sequences, length),
    the energies' category heads the slots it read."""

    def __init__(self, model, tokenizer, device: str, bf16: bool):
        from infill import Infiller
        from infill.energies import masked_lm
        from infill.lm.models import category_head, prediction_head

        self.model, self.device = model, device
        self.on = Infiller(model, tokenizer=tokenizer, device=device)
        self.off = Infiller(model, tokenizer=tokenizer, device=device, cache_mib=0)
        self.bf16 = Infiller(model, tokenizer=tokenizer, device=device, dtype="bfloat16") if bf16 else None
        self.categories = self.on.category_ids().to(device)
        self.head, self.vocabulary_head = category_head(model, self.categories), prediction_head(model)
        self.passes, self.recording = [], False
        model.base_model.register_forward_pre_hook(self._record, with_kwargs=True)  # after the bf16 copy
        masked_lm.category_head = self._recording_reads(category_head)
        self.generator = torch.Generator().manual_seed(0)

    def _record(self, module, args, kwargs):
        """A pass through the encoder: (sequences, length, slots the head reads in each: 1 until it runs)."""
        if self.recording:
            ids = kwargs.get("input_ids", kwargs.get("inputs_embeds"))
            self.passes.append((*ids.shape[:2], 1))

    def _recording_reads(self, category_head):
        """``category_head`` whose heads, on ``hidden (sequences, slots, H)``, record the slots each sequence of
        the last pass read."""

        def recording(model, categories):
            head = category_head(model, categories)

            def read(hidden):
                if self.recording and self.passes and hidden.dim() == 3:
                    self.passes[-1] = (*self.passes[-1][:2], hidden.shape[1])
                return head(hidden)

            return None if head is None else read

        return recording

    def sync(self):
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    def call(self, fn, *args, record=False, **kwargs):
        """``(result, wall seconds, passes)`` of ``fn(*args, **kwargs)``."""
        self.passes, self.recording = [], record
        self.sync()
        start = time.perf_counter()
        try:
            result = fn(*args, **kwargs)
            self.sync()
        finally:
            self.recording = False
        return result, time.perf_counter() - start, self.passes

    def shaped(self, template: str, n: int, reads: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` sequences of ``template``'s shape, blanks filled at random, ``reads`` of them masked (from blank
        ``row % d`` on); the masked slots ``(n, reads)``."""
        t = self.on.parse(template)
        d, rows = t.num_blanks, torch.arange(n)
        ids = t.input_ids.repeat(n, 1)
        ids[:, t.blank_positions] = self.categories.cpu()[
            torch.randint(len(self.categories), (n, d), generator=self.generator)
        ]
        slots = t.blank_positions[(rows[:, None] + torch.arange(min(reads, d))) % d]
        ids[rows[:, None], slots] = t.mask_token_id
        return ids.to(self.device), slots.to(self.device)

    @torch.inference_mode()
    def forward(self, ids, slots, full: bool = False, vocabulary: bool = False):
        """One bare pass: the encoder and the category head at the masked slots (``full``:
        ``model(input_ids=...)``; ``vocabulary``: the head over the whole vocabulary, then the categories)."""
        if full or self.head is None:
            return self.model(input_ids=ids).logits
        hidden = self.model.base_model(input_ids=ids)[0][torch.arange(len(ids), device=ids.device)[:, None], slots]
        return self.vocabulary_head(hidden)[..., self.categories] if vocabulary else self.head(hidden)

    def bare_seconds(self, template: str, passes: list[tuple[int, int, int]], vocabulary: bool = False) -> float:
        """Wall seconds of bare passes of the sizes and head reads in ``passes``, on ``template``'s shape."""
        batches = [self.shaped(template, n, reads) for n, _, reads in passes]
        self.sync()
        start = time.perf_counter()
        for ids, slots in batches:
            self.forward(ids, slots, vocabulary=vocabulary)
        self.sync()
        return time.perf_counter() - start

    def bare_rate(self, templates: list[str], size: int, full: bool = False, min_seconds: float = 0.2) -> float:
        """Sequences per second of bare passes of ``size`` sequences, one per template in turn, repeated over
        the templates until ``min_seconds`` have passed."""
        batches = [self.shaped(t, size) for t in templates]
        self.sync()
        start, done = time.perf_counter(), 0
        while True:
            for ids, slots in batches:
                self.forward(ids, slots, full)
            self.sync()
            done += size * len(batches)
            if time.perf_counter() - start >= min_seconds:
                return done / (time.perf_counter() - start)


def one_a_call(bench: Bench, texts: list[str], repeats: int, pass_size: int, min_seconds: float) -> list[dict]:
    """Per template and repeat: the default with the cache on and off (order alternating), the bare forward of
    its passes, bare rates at :data:`SIZES` and the full model at ``pass_size``, bfloat16 where native."""
    from infill.errors import InfillError

    rows = []
    for r in range(repeats):
        for i, text in enumerate(texts):
            try:
                rows.append(others(one_template, bench, text, r, (i + r) % 2 == 0, pass_size, min_seconds))
            except InfillError as exc:  # recorded, not fatal: the library may refuse a run (e.g. its budget)
                rows.append({"template": text, "seed": r, "error": str(exc)})
            print(json.dumps({k: v for k, v in rows[-1].items() if k != "template"}), flush=True)
    return rows


def one_template(bench: Bench, text: str, seed: int, on_first: bool, pass_size: int, min_seconds: float) -> dict:
    """One template's row of :func:`one_a_call`."""
    runs = {}
    for side in ("on", "off") if on_first else ("off", "on"):
        infiller = bench.on if side == "on" else bench.off
        runs[side] = bench.call(infiller.sample, text, top=5, seed=seed, record=side == "on")
    result, wall, passes = runs["on"]
    row = {
        "template": text,
        "seed": seed,
        "blanks": text.count("[MASK]"),
        "sampler": result.diagnostics.sampler,
        "sequences": result.diagnostics.encoder_sequences,
        "wall": wall,
        "steps": result.diagnostics.steps,
        "sequences_off": runs["off"][0].diagnostics.encoder_sequences,
        "wall_off": runs["off"][1],
        "steps_off": runs["off"][0].diagnostics.steps,
        "passes": len(passes),
        "pass_sequences": sum(n for n, _, _ in passes),
        "head_reads": sum(n * reads for n, _, reads in passes),
        "same_passes_wall": bench.bare_seconds(text, passes),
        "same_passes_wall_vocabulary": bench.bare_seconds(text, passes, vocabulary=True),
        "bare_rate": {str(size): bench.bare_rate([text], size, min_seconds=min_seconds) for size in SIZES},
        "full_rate": bench.bare_rate([text], pass_size, full=True, min_seconds=min_seconds),
    }
    if result.diagnostics.steps:
        row |= same_steps(bench, text, seed, result.diagnostics.steps, not on_first)
    if bench.bf16 is not None:
        row["bf16"] = bf16_pair(bench, text, seed, on_first)
    return row


def same_steps(bench: Bench, text: str, seed: int, steps: int, on_first: bool) -> dict:
    """The default's chains with the cache on and off for the same ``steps`` (a budget too large to stop them):
    the cache's wall at equal work, and whether the two give the same fillings (they must)."""
    runs = {}
    for side in ("on", "off") if on_first else ("off", "on"):
        infiller = bench.on if side == "on" else bench.off
        runs[side] = bench.call(infiller.sample, text, top=5, seed=seed, steps=steps, budget=10**9)
    return {
        "wall_same_steps": runs["on"][1],
        "wall_off_same_steps": runs["off"][1],
        "same_fillings_same_steps": runs["on"][0].texts == runs["off"][0].texts,
    }


def bf16_pair(bench: Bench, text: str, seed: int, float32_first: bool) -> dict:
    """The default in bfloat16 and in float32, one after the other: wall ratio, same top-5 set."""
    from infill.errors import InfillError

    pair = {"float32": bench.on, "bfloat16": bench.bf16}
    try:
        timed = {
            name: bench.call(pair[name].sample, text, top=5, seed=seed)
            for name in (("float32", "bfloat16") if float32_first else ("bfloat16", "float32"))
        }
    except InfillError as exc:
        return {"error": str(exc)}
    (full, full_wall, _), (low, low_wall, _) = timed["float32"], timed["bfloat16"]
    return {"wall_ratio": low_wall / full_wall, "same_top5_set": set(full.texts) == set(low.texts)}


def batch(bench: Bench, texts: list[str], repeats: int, pass_size: int, min_seconds: float) -> list[dict]:
    """``sample_many`` over all ``texts`` against bare passes of ``pass_size`` on their shapes, in turn."""
    from infill.errors import InfillError

    rows = []
    for _ in range(repeats):
        try:
            rows.append(others(one_batch, bench, texts, pass_size, min_seconds))
        except InfillError as exc:
            rows.append({"templates": len(texts), "error": str(exc)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def one_batch(bench: Bench, texts: list[str], pass_size: int, min_seconds: float) -> dict:
    """One row of :func:`batch`."""
    results, wall, passes = bench.call(bench.on.sample_many, texts, top=5, seed=0, record=True)
    return {
        "templates": len(texts),
        "sequences": sum(res.diagnostics.encoder_sequences for res in results),
        "wall": wall,
        "bare_rate": bench.bare_rate(texts, pass_size, min_seconds=min_seconds),
        "passes": len(passes),
        "pass_sequences": sum(n for n, _, _ in passes),
    }


def gpu_busy(bench: Bench, texts: list[str]) -> dict:
    """The share of one batch call's wall that CUDA kernels ran (their summed time; copies and sets left out)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    from infill.errors import InfillError

    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            _, wall, _ = bench.call(bench.on.sample_many, texts, top=5, seed=0)
    except InfillError as exc:
        return {"error": str(exc)}
    kernels = [
        e for e in prof.events() if e.device_type == DeviceType.CUDA and not e.name.startswith(("Memcpy", "Memset"))
    ]
    busy = sum(e.time_range.elapsed_us() for e in kernels) / 1e6
    return {"wall": wall, "kernel_seconds": busy, "kernels": len(kernels), "busy_share": busy / wall}


HOST_OPS = {
    "aten::_local_scalar_dense": "scalar reads (.item(), bool(): each a device sync on a GPU)",
    "aten::nonzero": "nonzero (boolean indexing: a device sync on a GPU too)",
    "aten::select": "select",
    "aten::clone": "clone",
    "aten::logsumexp": "logsumexp",
}
"""The host ops the issue counted on an H100 (and ``nonzero``, which syncs too), by their ATen names."""


def host_ops(bench: Bench, texts: list[str]) -> str:
    """The :data:`HOST_OPS` that one default call on each of ``texts`` dispatches (torch.profiler, CPU side:
    the counts are the host's work, whatever the device), in all and per template, as a markdown table."""
    from collections import Counter

    from torch.profiler import ProfilerActivity, profile

    counts = []
    for text in texts:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            bench.on.sample(text, top=5, seed=0)
        counts.append(Counter(e.name for e in prof.events() if e.name in HOST_OPS))
    lines = [f"| op | in all ({len(texts)} templates) | per template: median (min-max) |", "|---|---|---|"]
    for name, what in HOST_OPS.items():
        each = [c[name] for c in counts]
        lines.append(f"| `{name}`: {what} | {sum(each)} | {statistics.median(each)} ({min(each)}-{max(each)}) |")
    return "\n".join(lines) + "\n"


def profile_default(bench: Bench, texts: list[str], top: int) -> str:
    """cProfile of one default call on each of ``texts`` (after a warm-up call): the ``top`` functions by
    cumulative and by own time."""
    import cProfile
    import io
    import pstats

    out = io.StringIO()
    for text in texts:
        bench.on.sample(text, top=5, seed=0)
        profiler = cProfile.Profile()
        result = profiler.runcall(bench.on.sample, text, top=5, seed=0)
        out.write(
            f"== {result.diagnostics.sampler}, {text.count('[MASK]')} blanks, "
            f"{result.diagnostics.encoder_sequences} encoder sequences: {text}\n"
        )
        for key in ("cumulative", "tottime"):
            pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(top)
    return out.getvalue().replace(str(Path(torch.__file__).parents[1]) + "/", "").replace(str(ROOT) + "/", "")


def spread(values: list[float]):
    if not values:
        return None
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
        "n": len(values),
    }


def summarize(rows: list[dict], batches: list[dict], busy, pass_size: int) -> dict:
    """Medians and ranges of every ratio over ``rows`` (one a call) and ``batches``; None where none ran."""
    rate = [r["sequences"] / r["wall"] for r in rows]
    host = [(r["wall"] / r["sequences"]) / (r["same_passes_wall"] / r["pass_sequences"]) for r in rows]
    chains = [r for r in rows if r.get("steps_off")]  # runs of chains (one-pass draws take no steps)
    bf16 = [r["bf16"] for r in rows if "bf16" in r and "error" not in r["bf16"]]
    same = [r for r in rows if "wall_same_steps" in r]
    by_template: dict[str, list[float]] = {}  # each template's on/off wall ratios over the repeats
    for r in rows:
        by_template.setdefault(r["template"], []).append(r["wall"] / r["wall_off"])
    out = {
        "rows": len(rows),
        "cache_on_slower": sum(r["wall"] > r["wall_off"] for r in rows),
        "templates": len(by_template),
        "cache_on_slower_templates": sum(statistics.median(v) > 1 for v in by_template.values()),
        "same_steps_rows": len(same),
        "same_steps_slower": sum(r["wall_same_steps"] > r["wall_off_same_steps"] for r in same),
        "same_steps_same_fillings": sum(r["same_fillings_same_steps"] for r in same),
    }
    out |= {
        f"default_over_bare_{size}": spread([x / r["bare_rate"][str(size)] for x, r in zip(rate, rows)])
        for size in SIZES
    }
    out |= {
        "default_over_bare": out[f"default_over_bare_{pass_size}"],
        "default_over_full_model": spread([x / r["full_rate"] for x, r in zip(rate, rows)]),
        "host_over_same_passes": spread(host),
        "host_over_vocabulary_head_passes": spread(
            [
                (r["wall"] / r["sequences"]) / (r["same_passes_wall_vocabulary"] / r["pass_sequences"])
                for r in rows
                if "same_passes_wall_vocabulary" in r
            ]
        ),
        **{
            f"host_over_same_passes_{sampler}": spread([h for h, r in zip(host, rows) if r["sampler"] == sampler])
            for sampler in sorted({r["sampler"] for r in rows})
        },  # auto: gibbs at 2-4 blanks, one-pass draws above
        "batch_over_bare": spread([b["sequences"] / b["wall"] / b["bare_rate"] for b in batches]),
        "gpu_busy": spread([busy["busy_share"]] if busy and "busy_share" in busy else []),
        "cache_on_over_off": spread([r["wall"] / r["wall_off"] for r in rows]),
        "cache_sequences_on_over_off": spread([r["sequences"] / r["sequences_off"] for r in rows]),
        "cache_steps_on_over_off": spread([r["steps"] / r["steps_off"] for r in chains]),
        "cache_on_over_off_same_steps": spread(
            [r["wall_same_steps"] / r["wall_off_same_steps"] for r in rows if "wall_same_steps" in r]
        ),
        "bf16_over_float32": spread([b["wall_ratio"] for b in bf16]),
        "bf16_same_top5": spread([sum(b["same_top5_set"] for b in bf16) / len(bf16)] if bf16 else []),
    }
    if rows and batches:
        out["batch_over_one_a_call"] = round(
            statistics.median([b["sequences"] / b["wall"] for b in batches]) / statistics.median(rate), 3
        )
    return out


def summaries(
    rows: list[dict], batches: list[dict], busy, pass_size: int, threads: int, cores: int, slack: float
) -> dict:
    """:func:`summarize` over every row that ran, and over the quiet ones: those during which other processes
    left at least ``threads - slack`` of the ``cores`` free."""
    quiet = 1 - (threads - slack) / cores  # the most of the cores others may have kept busy
    errors = sum("error" in r or "error" in r.get("bf16", {}) for r in rows + batches)
    rows, batches = [r for r in rows if "error" not in r], [b for b in batches if "error" not in b]
    calm = [r for r in rows if r["others_cpu"] <= quiet], [b for b in batches if b["others_cpu"] <= quiet]
    return {
        "errors": errors,
        "quiet": round(quiet, 3),
        "all": summarize(rows, batches, busy, pass_size),
        "quiet_rows": summarize(*calm, busy, pass_size),
    }


def machine(device: str, bf16_reason: str) -> dict:
    info = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "device": device,
        "bf16": bf16_reason,
    }
    if device.startswith("cuda"):
        info["gpu"] = torch.cuda.get_device_name()
    import infill

    tree = Path(infill.__file__).resolve().parents[1]  # the tree measured (PYTHONPATH may name another)

    def git(*args) -> str:
        return subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True).stdout

    try:  # the tree measured: its commit and the files of infill/ changed since
        info["commit"], info["changed"] = (
            git("rev-parse", "--short", "HEAD").strip(),
            len(git("status", "--porcelain", "infill").splitlines()),
        )
    except OSError:
        pass
    return info


def verdict(key: str, value: float, context: set[str]) -> tuple[str, str]:
    op, bound, where = TARGETS[key]
    met = value <= bound if op == "<=" else value >= bound
    if where != "any" and where not in context:
        return f"{op} {bound} ({where})", f"{'met' if met else 'missed'}, shown for reference"
    return f"{op} {bound} ({where})", "met" if met else "**missed**"


def cell(v) -> str:
    return "-" if v is None else f"{v['median']} ({v['min']}-{v['max']}, {v['n']})"


def markdown(report: dict) -> str:
    s, m, a = report["summary"], report["machine"], report["settings"]
    context = {"any", m["device"].split(":")[0]}
    context |= {"cpu proxy"} if a["proxy"] and m["device"] == "cpu" else set()
    context |= {"native bf16"} if report["bf16_native"] else set()
    every, calm = s["all"], s["quiet_rows"]
    names = {
        "default_over_bare": f"default one a call: sequences/s over the bare forward's at {a['pass_size']} a pass",
        **{f"default_over_bare_{n}": f"same, bare passes of {n}" for n in SIZES if n != a["pass_size"]},
        "default_over_full_model": f"same, over `model(input_ids=...)` at {a['pass_size']} a pass",
        "host_over_same_passes": "default: wall per encoder sequence over a bare forward of its own passes "
        "(same sequences, same head reads)",
        **{k: f"same, runs of `{k.rsplit('_', 1)[1]}`" for k in every if k.startswith("host_over_same_passes_")},
        "host_over_vocabulary_head_passes": "same, the bare forward's head over the whole vocabulary, then the "
        "categories' columns (the energy's head as it was before)",
        "batch_over_bare": f"{a['batch']} templates in one call: sequences/s over the bare forward's",
        "gpu_busy": "GPU busy: CUDA kernel time / wall of the batch call",
        "cache_on_over_off": "cache on / off: wall of the default",
        "cache_sequences_on_over_off": "cache on / off: encoder sequences",
        "cache_steps_on_over_off": "cache on / off: chain steps (runs of chains)",
        "cache_on_over_off_same_steps": "cache on / off: wall at the same work (runs of chains, the same steps)",
        "bf16_over_float32": "bfloat16 / float32: wall of the default",
        "bf16_same_top5": "bfloat16: share of templates with the same top-5 set",
    }
    lines = [
        f"# `scripts.bench_gpu` on {m['device']}: {a['model']}",
        "",
        f"{m.get('gpu', m['cpu'])}, {m['threads']} threads; torch {m['torch']}, transformers "
        f"{m['transformers']}; commit {m.get('commit', '?')} with {m.get('changed', '?')} files of infill/ "
        f"changed; {report['date']}; {report['seconds']} s.",
        "",
        f"    {report['command']}",
        "",
        f"{a['templates']} check templates one a call x {a['repeats']} repeat(s) (seeds 0..), "
        f"{a['batch']} in one `sample_many` call x {a['batch_repeats']}; the encoder's pass size here "
        f"{a['pass_size']}. Median (min-max, n) of per-template ratios, each side timed right after the other. "
        f"Other jobs may share the machine: *quiet* rows are those during which other processes kept at most "
        f"{s['quiet']:.0%} of its cores busy (from /proc/stat), leaving each of this run's threads a core; the "
        "verdict reads them where there are 3 or more.",
        "",
        "| measure | all rows | quiet rows | target | verdict |",
        "|---|---|---|---|---|",
    ]
    for key, name in names.items():
        if every.get(key) is None:
            continue
        judged = calm[key] if calm.get(key) and calm[key]["n"] >= 3 else every[key]
        target, said = verdict(key, judged["median"], context) if key in TARGETS else ("", "")
        lines.append(f"| {name} | {cell(every[key])} | {cell(calm.get(key))} | {target} | {said} |")
    shared = statistics.median([r["others_cpu"] for r in report["one_a_call"] if "others_cpu" in r] or [0])
    lines += [
        "",
        f"- Other processes kept a median {shared:.0%} of the machine's {m.get('cores', '?')} cores busy "
        "during the rows"
        + (
            f"; with {m['threads']} threads on a shared machine, waits at each op's thread "
            "barrier can outweigh the compute: compare a run with `--threads 1`."
            if shared > s["quiet"] and m["threads"] > 1
            else "."
        ),
        f"- Cache on slower than off on {every['cache_on_slower']} of {every['rows']} rows "
        f"({calm['cache_on_slower']} of {calm['rows']} quiet ones; the target says never); by the median of "
        f"each template's {a['repeats']} repeat(s), on {every.get('cache_on_slower_templates', '?')} of "
        f"{every.get('templates', '?')} templates. `auto` spends a "
        "budget of encoder sequences, so both sides send about as many through the encoder; the steps row "
        "says how much chain work each bought. At the same work (runs of chains, the same steps) cache on "
        f"was slower on {every['same_steps_slower']} of {every['same_steps_rows']}, with the same fillings on "
        f"{every['same_steps_same_fillings']} of {every['same_steps_rows']}.",
        f"- Batch call / one a call, sequences per second (medians of the two loops, not interleaved): "
        f"{every.get('batch_over_one_a_call', 'n/a')}x.",
        f"- Runs the library refused (InfillError, listed in the JSON): {s['errors']}.",
        f"- bfloat16: {m['bf16']}.",
        f"- GPU busy: {'measured' if every['gpu_busy'] else 'CUDA only, not measured'}.",
        "- The bare forward is `model.base_model(input_ids=...)` and the prediction head over the categories "
        "only at one masked slot a sequence (at a pass size), or at as many as the run read (its own passes): "
        "what the energy's passes compute; `model(input_ids=...)` runs the head at every position.",
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    parser.add_argument("--model", default=str(DEV_MODEL), help="a masked-LM checkpoint (default the dev MLM)")
    parser.add_argument("--proxy", action="store_true", help="the 2-layer 128-wide random BERT, the model's tokenizer")
    parser.add_argument("--templates", type=int, default=20, help="templates one a call (default 20)")
    parser.add_argument("--repeats", type=int, default=1, help="passes over them, seeds 0.. (default 1)")
    parser.add_argument("--batch", type=int, default=40, help="templates in the one call (default 40)")
    parser.add_argument("--batch-repeats", type=int, default=2)
    parser.add_argument("--min-bare-seconds", type=float, default=0.5, help="each bare rate runs at least this long")
    parser.add_argument("--bf16", choices=("auto", "on", "off"), default="auto", help="on: also where emulated")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--slack", type=float, default=0.2, help="a quiet row's share of a core a thread may lack")
    parser.add_argument("--out", type=Path, help="OUT.json and OUT.md (default eval/bench-gpu/<device>-<model>)")
    parser.add_argument("--markdown-only", action="store_true", help="re-summarize OUT.json's rows, rewrite both")
    parser.add_argument(
        "--host-ops",
        action="store_true",
        help="instead: count the host ops of one default call per template, to OUT-host-ops.md",
    )
    parser.add_argument(
        "--profile",
        type=int,
        metavar="N",
        help="instead: cProfile one default call per regime, its top N functions, to OUT-profile.txt",
    )
    parser.add_argument("--augment", type=int, metavar="N", help="instead: augmentation on N check sentences")
    args = parser.parse_args(argv)
    device_type = torch.device(args.device).type
    if args.augment:
        from scripts import bench_augment

        out = args.out or ROOT / "eval" / "bench-gpu" / f"{device_type}-augment"
        methods = "independent,independent/no-pll,nlpaug"
        common = ["--half", "check", "--sentences", str(args.augment), "--nlpaug-p", "0.11", "--methods", methods]
        return bench_augment.main([*common, "--model", args.model, "--device", args.device, "--out", str(out)])
    out = args.out or ROOT / "eval" / "bench-gpu" / f"{device_type}-{'proxy' if args.proxy else 'devmlm'}"
    if args.markdown_only:
        report = json.loads((out.parent / f"{out.name}.json").read_text())
        report["summary"] = summaries(
            report["one_a_call"],
            report["batch"],
            report["gpu_busy"],
            report["settings"]["pass_size"],
            report["machine"]["threads"],
            report["machine"].get("cores", os.cpu_count()),
            args.slack,
        )
        return write(report, out)
    torch.set_num_threads(args.threads)
    from infill.energies.masked_lm import PASS_SEQUENCES

    pass_size = PASS_SEQUENCES.get(device_type, PASS_SEQUENCES["cuda"])
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    native, reason = native_bf16(args.device)
    run_bf16 = args.bf16 == "on" or (args.bf16 == "auto" and native)
    reason = f"{'measured' if run_bf16 else 'skipped'}: {reason}"
    bench = Bench(load(args, tokenizer), tokenizer, args.device, run_bf16)
    one, many = templates(args.templates), templates(args.batch)
    from infill.errors import InfillError

    try:  # warm-up: allocator, oneDNN or CUDA kernels
        bench.call(bench.on.sample, one[0], top=5, seed=0)
    except InfillError:
        pass
    if args.profile:
        text = f"    {command()}\n\n" + profile_default(bench, one[:2], args.profile)
        (out.parent / f"{out.name}-profile.txt").write_text(text)
        print(text)
        return 0
    if args.host_ops:
        info = machine(args.device, reason)
        text = (
            f"# Host ops of the default, one template a call\n\n    {command()}\n\n"
            f"{info['cpu']}, torch {info['torch']}; commit {info.get('commit', '?')} with "
            f"{info.get('changed', '?')} files of infill/ changed.\n\n" + host_ops(bench, one)
        )
        (out.parent / f"{out.name}-host-ops.md").write_text(text)
        print(text)
        return 0
    for size, full in [(n, False) for n in SIZES] + [(pass_size, True)]:
        bench.bare_rate(one[:1], size, full, min_seconds=0)
    start, measured = time.perf_counter(), machine(args.device, reason)  # the tree as it was imported
    rows = one_a_call(bench, one, args.repeats, pass_size, args.min_bare_seconds)
    batches = batch(bench, many, args.batch_repeats, pass_size, args.min_bare_seconds)
    busy = gpu_busy(bench, many) if device_type == "cuda" else None
    report = {
        "command": command() if argv is None else str(argv),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": measured,
        "bf16_native": native,
        "settings": {
            "model": "proxy: BertForMaskedLM(hidden 128, 2 layers, 2 heads, intermediate 512, random, seed 0)"
            f" with {Path(args.model).name}'s tokenizer"
            if args.proxy
            else Path(args.model).name,
            "proxy": args.proxy,
            "templates": len(one),
            "repeats": args.repeats,
            "batch": len(many),
            "batch_repeats": args.batch_repeats,
            "pass_size": pass_size,
            "bf16": args.bf16,
        },
        "seconds": round(time.perf_counter() - start, 1),
        "summary": summaries(rows, batches, busy, pass_size, args.threads, os.cpu_count(), args.slack),
        "gpu_busy": busy,
        "one_a_call": rows,
        "batch": batches,
    }
    return write(report, out)


def command() -> str:
    return " ".join(["python -m scripts.bench_gpu", *sys.argv[1:]])


def write(report: dict, out: Path) -> int:
    out.parent.mkdir(parents=True, exist_ok=True)
    (out.parent / f"{out.name}.json").write_text(json.dumps(report, indent=1))
    (out.parent / f"{out.name}.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
