"""What the benchmarks and studies share: paths, the model and threads, a study's rows in one JSONL file, the
equal-compute accounting, timing spreads and the environment signature (tables: ``infill.evaluation.tables``).
Run a script as ``python -m scripts.NAME`` from the repository root."""

from __future__ import annotations

import fcntl
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterable

ROOT = Path(__file__).resolve().parents[1]
DEV_MODEL = ROOT.parent / "shared" / "models" / "infill-dev-minilm-mlm"
CORPORA = ROOT.parent / "shared" / "corpora" / "bert-gen"

TOP = 5
SAME = 1e-4  # top-5 mean PLLs this close are "the same"
TARGETS = {"wins": 0.65, "self_bleu": 2.0, "accuracy": -0.02, "wall": 1.2}


def log(message: str) -> None:
    print(time.strftime("%H:%M:%S"), message, file=sys.stderr, flush=True)


def load_infiller(model: str | Path = DEV_MODEL, threads: int | None = 1, warm: bool = True):
    """An ``Infiller`` on ``model`` with ``threads`` torch threads (None: torch's default), warmed up once."""
    import torch

    from infill import Infiller

    if threads:
        torch.set_num_threads(threads)
    loaded = Infiller(str(model))
    if warm:
        loaded.sample("the [MASK] sat on the mat .", top=TOP, seed=0)
    return loaded


def load_model(model: str | Path, device: str = "cpu", vocab_size: int | None = None):
    """A masked LM in float32 on ``device``: ``"proxy"`` is a 2-layer 128-wide random BERT (seed 0; a smoke test's
    model, or a CPU proxy of a large one), ``"bert-base"`` bert-base's shape with random weights (cost does not
    depend on the weights), else a checkpoint (a float16 one is widened)."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig, BertForMaskedLM

    if model in ("proxy", "bert-base"):
        torch.manual_seed(0)
        vocab_size = vocab_size or AutoTokenizer.from_pretrained(DEV_MODEL).vocab_size
        size = {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512}
        loaded = BertForMaskedLM(
            BertConfig(vocab_size=vocab_size, attn_implementation="sdpa", **(size if model == "proxy" else {}))
        )
    else:
        loaded = AutoModelForMaskedLM.from_pretrained(model, dtype=torch.float32, attn_implementation="sdpa")
    return loaded.to(device).eval()


# ---------------------------------------------------------------- a study's rows


class Rows:
    """A study's rows, one JSON object a line in one file: appended as each finishes (a run resumes where it
    stopped) and read back in the order of ``key``. A last line cut short by a killed run is dropped."""

    def __init__(self, path: Path, key: Callable[[dict], object]):
        self.path, self.key = Path(path), key

    def read(self) -> list[dict]:
        if not self.path.exists():
            return []
        text = self.path.read_text()
        rows = [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines() if line.strip()]
        return sorted(rows, key=self.key)

    def done(self) -> set:
        return {self.key(row) for row in self.read()}

    def append(self, row: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)  # shards append to the same file
            f.seek(0)
            data = f.read()
            if data and not data.endswith(b"\n"):  # a line cut short: cut it off before appending
                f.truncate(data.rfind(b"\n") + 1)
            f.write((json.dumps(row) + "\n").encode())


# ---------------------------------------------------------------- the equal-compute accounting


def load_half(half: str) -> list[dict]:
    """The calibration suite's ``tune`` or ``check`` half."""
    with open(ROOT / "corpora" / "calibration" / f"{half}.jsonl") as f:
        return [json.loads(line) for line in f if line.strip()]


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.@-]+", "-", text).strip("-")


def run_key(row: dict) -> tuple:
    """A run's place: (phase, template, seed, row), ordered as the per-run files of the earlier layout were."""
    return row["phase"], row["id"], f"seed{row['seed']}", f"{slug(row['row'])}.json"


def task_row(phase: str, task: dict, seed: int) -> dict:
    """The fields a run's row opens with: its phase, the task's id, regime, blank count and removed words, the
    seed."""
    return {
        "phase": phase,
        "id": task["id"],
        "regime": task["regime"],
        "blanks": len(task["removed"]),
        "removed": task["removed"],
        "seed": seed,
    }


def fill(template: str, fills: list[str]) -> str:
    """The template's whitespace tokens with its ``[MASK]`` tokens replaced by ``fills`` in order."""
    it = iter(fills)
    return " ".join(next(it) if w == "[MASK]" else w for w in template.split())


def measure(infiller, task: dict, seed: int, **kwargs) -> dict:
    """One timed ``Infiller.sample`` run at temperature 1: its top 5, their texts and its compute."""
    start = time.perf_counter()
    result = infiller.sample(task["template"], top=TOP, seed=seed, temperature=1.0, **kwargs)
    seconds = time.perf_counter() - start
    d = result.diagnostics
    fills = [list(s.fills) for s in result.samples]
    return {
        "energies": [float(s.energy) for s in result.samples],
        "fills": fills,
        "texts": [fill(task["template"], f) for f in fills],
        "encoder_sequences": d.encoder_sequences,
        "seconds": seconds,
        "candidates": d.candidates,
        "acceptance_rate": d.acceptance_rate,
        "draws": d.num_samples,
        "cache_hits": d.cache_hits,
    }


def metrics(record: dict) -> dict:
    """The top-5 mean PLL, self-BLEU (percent) of the 5 and top-1 word accuracy of one run."""
    from infill.metrics import self_bleu

    texts = record["texts"]
    top1 = record["fills"][0] if record["fills"] else []
    accuracy = statistics.fmean(a.lower() == b.lower() for a, b in zip(top1, record["removed"])) if top1 else 0.0
    return {
        "pll": statistics.fmean(record["energies"]),
        "self_bleu": 100 * self_bleu(texts) if len(texts) > 1 else 100.0,
        "accuracy": accuracy,
        "sequences": record["encoder_sequences"],
        "seconds": record["seconds"],
    }


def summary(records: list[dict]) -> dict:
    """The mean metrics of runs, their wall per encoder sequence and (orders) their budget ratio and draws."""
    m = [metrics(r) for r in records]
    return {
        "runs": len(m),
        "templates": len({r["id"] for r in records}),
        "pll": statistics.fmean(x["pll"] for x in m),
        "self_bleu": statistics.fmean(x["self_bleu"] for x in m),
        "accuracy": statistics.fmean(x["accuracy"] for x in m),
        "sequences": statistics.fmean(x["sequences"] for x in m),
        "wall_per_sequence": sum(x["seconds"] for x in m) / sum(x["sequences"] for x in m),
        "ratio": statistics.fmean(r["ratio"] for r in records) if "ratio" in records[0] else None,
        "draws": statistics.fmean(r["draws"] for r in records) if "draws" in records[0] else None,
    }


def parse(spec: str) -> dict:
    """``method+key=value+...`` as ``Infiller.sample`` keywords (values read as JSON where they parse)."""
    method, *settings = spec.split("+")
    out = {"sampler": method}
    for setting in settings:
        key, value = setting.split("=", 1)
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def paired(ours: list[dict], order: list[dict], metrics) -> tuple:
    """``(keys, ours, order, our metrics, the order's, higher, lower)``: the (template, seed) pairs both ran, each
    side's runs and ``metrics`` by pair, and on how many pairs our top-5 mean PLL is higher / lower."""
    a = {(r["id"], r["seed"]): r for r in ours}
    b = {(r["id"], r["seed"]): r for r in order}
    keys = sorted(a.keys() & b.keys())
    ma, mb = {k: metrics(a[k]) for k in keys}, {k: metrics(b[k]) for k in keys}
    diffs = [ma[k]["pll"] - mb[k]["pll"] for k in keys]
    return keys, a, b, ma, mb, sum(x > SAME for x in diffs), sum(x < -SAME for x in diffs)


def against_order(keys: list, a: dict, b: dict, ma: dict, mb: dict, wins: tuple[int, int]) -> dict:
    """Our runs ``a`` beside the order's ``b`` on the pairs ``keys`` (``ma``, ``mb``: their metrics), ``wins``
    the (higher, lower) count the win share is taken from: the win share, each side's mean PLL, self-BLEU and
    accuracy, the sequence and wall ratios, and which of :data:`TARGETS` they meet."""
    sa, sb = summary([a[k] for k in keys]), summary([b[k] for k in keys])
    out = {"win_share": wins[0] / sum(wins) if sum(wins) else None}
    for name in ("pll", "self_bleu", "accuracy"):
        out |= {name: sa[name], f"order_{name}": sb[name]}
    out["sequence_ratio"] = statistics.fmean(ma[k]["sequences"] / mb[k]["sequences"] for k in keys)
    out["wall_ratio"] = sa["wall_per_sequence"] / sb["wall_per_sequence"]
    out["targets"] = {
        "wins": (out["win_share"] or 0) >= TARGETS["wins"],
        "self_bleu": out["self_bleu"] <= out["order_self_bleu"] + TARGETS["self_bleu"],
        "accuracy": out["accuracy"] >= out["order_accuracy"] + TARGETS["accuracy"],
        "wall": out["wall_ratio"] <= TARGETS["wall"],
    }
    return out


def compare_runs(ours: list[dict], order: list[dict]) -> dict:
    """Our runs against the order's, run by run (:func:`paired`, :func:`against_order`)."""
    keys, a, b, ma, mb, higher, lower = paired(ours, order, metrics)
    return {"pairs": len(keys), "higher": higher, "lower": lower, **against_order(keys, a, b, ma, mb, (higher, lower))}


# ---------------------------------------------------------------- templates from the bert-gen corpora

CORPUS_FILES = {"wt103": "wiki103.5k.txt", "tbc": "tbc.5k.txt"}
WORDS = (12, 30)


def normalise(line: str) -> str:
    """The protocols' normalisation: lowercase, ``@@UNKNOWN@@`` -> ``[UNK]``, TBC's quote marks -> ``"``."""
    text = line.strip().replace("@@UNKNOWN@@", "[UNK]").lower()
    return text.replace("``", '"').replace("''", '"')


def sentences(corpus_dir: Path = CORPORA) -> list[tuple[str, list[str]]]:
    """``(id, words)`` of every sentence of 12-30 words, ids as in the task manifests (corpus, line index)."""
    out = []
    for name, file in CORPUS_FILES.items():
        lines = [line for line in (corpus_dir / file).read_text(encoding="utf-8").splitlines() if line.strip()]
        for i, line in enumerate(lines):
            words = normalise(line).split()
            if WORDS[0] <= len(words) <= WORDS[1] and "[unk]" not in words:
                out.append((f"{name}-{i}", words))
    return out


def blankable(tokenizer, word: str) -> bool:
    """A word of letters that the tokenizer spells as one word-start token."""
    return word.isalpha() and len(tokenizer.tokenize(word)) == 1 and not tokenizer.tokenize(word)[0].startswith("##")


def template(tokenizer, words: list[str], count: int, rng):
    """``count`` blanks at blankable words chosen by ``rng`` (None if there are too few): text and words."""
    spots = [i for i, w in enumerate(words) if blankable(tokenizer, w)]
    if len(spots) < count:
        return None
    chosen = sorted(rng.sample(spots, count))
    return " ".join("[MASK]" if i in chosen else w for i, w in enumerate(words)), [words[i] for i in chosen]


# ---------------------------------------------------------------- reports


def median_range(values: Iterable[float]) -> dict:
    """Median, min and max of timings (or ratios), and the values."""
    values = list(values)
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def versions() -> str:
    """torch's and transformers' versions, for a report's first lines."""
    from infill.pipeline.signature import library_versions

    return ", ".join(f"{k} {v}" for k, v in library_versions(("torch", "transformers")).items())


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def commit(tree: Path = ROOT) -> str | None:
    """The tree's short commit, with ``+changes`` when its package differs from it."""

    def git(*args):
        try:
            return subprocess.run(
                ["git", "-C", str(tree), *args], capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    head = git("rev-parse", "--short", "HEAD")
    return head and head + ("+changes" if git("status", "--porcelain", "--", "infill") else "")


def environment(**extra) -> dict:
    """The signature of a figure: CPU, cores, library versions, torch threads, commit, and ``extra``."""
    import torch

    from infill.pipeline.signature import library_versions

    versions = library_versions(("torch", "transformers", "infill-mcmc"))
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        **versions,
        "torch_threads": torch.get_num_threads(),
        "commit": commit(),
        **extra,
    }


def signature(env: dict) -> str:
    """``environment()`` as one line for a report."""
    return "; ".join(f"{key} {value}" for key, value in env.items())
