"""What the default adds to the model's own work: torch calls on the host per encoder sequence, and wall per
sequence on a fast encoder against a bare pass.

    python -m scripts.bench_host [--model DIR] [--blanks 2,3,4,6,8] [--templates 2] [--rounds 3]
                                 [--layers 2] [--sites 25] [--out eval/host-calls-minilm] [--markdown-only]

Templates: sentences of 12 to 30 words of ``corpora/bert-gen/wiki103.5k.txt`` (normalised as the calibration
suite's), in file order, at least three words a blank, whose words at evenly spread positions (``(k + 1) n /
(b + 1)`` for ``b`` blanks in ``n`` words) the tokenizer spells as one word-start token each: those words are the
blanks, ``--templates`` templates of each blank count of ``--blanks``. The default is ``Infiller(model).sample(
template, top=5, seed=0)`` (method ``auto``), on one torch thread.

- **host calls**: one default run per template under a ``torch.overrides.TorchFunctionMode`` that counts every
  torch function and Tensor method called outside the model's own forward: counting is suspended inside
  ``model`` and ``model.base_model`` (forward hooks) and inside the prediction heads that
  :func:`infill.lm.models.category_head` and :func:`~infill.lm.models.prediction_head` build. Attribute reads
  (``.shape``, ``.device``) go through the mode too; they are counted apart, not as calls. Each call is charged
  to the innermost Python frame outside torch that made it (its *site*). Reported per encoder sequence
  (``diagnostics.encoder_sequences``), with the sites that made the most calls.
- **wall on a fast encoder**: the model cut to its first ``--layers`` layers (its embeddings, those layers and
  its head; a fast encoder, as a GPU's is): the default's wall per encoder sequence over a bare pass's, where a
  bare pass is 64 sequences of the template's length (blanks filled with random categories, one masked) through
  ``model.base_model`` and the category head at the masked slot, as many passes as the default's sequences fill;
  also the same in CPU seconds (``time.process_time``: on a shared machine, without the waits for a core). The
  two sides run in turn, template by template (the default first in even rounds, the bare passes first in
  odd ones), for ``--rounds`` rounds; median and range of the ratio over templates and rounds.

Targets: at most :data:`CALLS_TARGET` host calls per encoder sequence, and the fast encoder's wall per
sequence at most :data:`WALL_TARGET` times the bare pass's. Writes ``OUT/report.json`` and ``OUT/report.md``
with the CPU model, the library versions, the threads and the commit; ``--markdown-only`` re-summarizes a written
``OUT/report.json`` (``--sites`` may change) and rewrites both.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import statistics
import sys
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

from scripts.harness import DEV_MODEL, ROOT, blankable, environment, log, sentences, signature

CALLS_TARGET = 3.0
WALL_TARGET = 1.5
BARE_PASS = 64
TOP = 5
LINES = 6
"""The busiest lines shown beside a function in the markdown."""
TORCH_DIR = str(Path(torch.__file__).parent)


def templates(tokenizer, blanks: int, count: int, limit: int) -> list[str]:
    """The first ``count`` templates of ``blanks`` blanks (module docstring), each at most ``limit`` tokens."""
    out = []
    for name, words in sentences():
        n = len(words)
        at = sorted({(k + 1) * n // (blanks + 1) for k in range(blanks)})
        if not name.startswith("wt103") or n < 3 * blanks or len(at) < blanks:
            continue
        if all(blankable(tokenizer, words[i]) for i in at):
            text = " ".join("[MASK]" if i in at else w for i, w in enumerate(words))
            if len(tokenizer(text)["input_ids"]) <= limit:
                out.append(text)
        if len(out) == count:
            return out
    raise SystemExit(f"error: only {len(out)} templates of {blanks} blanks in the corpus")


def fast_encoder(path: str, layers: int):
    """The masked LM at ``path`` in float32 on the CPU, cut to its first ``layers`` layers (its embeddings and
    head kept)."""
    from transformers import AutoModelForMaskedLM, logging

    logging.set_verbosity_error()  # the layers cut off are reported as unexpected weights
    return AutoModelForMaskedLM.from_pretrained(
        path, dtype=torch.float32, attn_implementation="sdpa", num_hidden_layers=layers
    ).eval()


class HostCalls(TorchFunctionMode):
    """Counts the torch calls made outside ``model``'s forward (module docstring), by site and name."""

    def __init__(self, model):
        super().__init__()
        self.model, self.depth = model, 0
        self.calls: Counter = Counter()  # (site, name) -> calls
        self.attribute_reads = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if self.depth == 0:
            name = getattr(func, "__name__", repr(func))
            if name == "__get__":
                self.attribute_reads += 1
            else:
                self.calls[_site(), _qualified(func)] += 1
        return func(*args, **(kwargs or {}))

    @contextmanager
    def counting(self):
        """The mode on, suspended inside the model's forward and its heads."""
        from infill.lm import models

        handles = []
        for module in {self.model, self.model.base_model}:
            handles.append(module.register_forward_pre_hook(lambda *_: self._enter()))
            handles.append(module.register_forward_hook(lambda *_: self._leave(), always_call=True))
        patched = [
            (module, name, original)
            for name in ("category_head", "prediction_head")
            for module in list(sys.modules.values())
            if getattr(module, "__name__", "").startswith("infill")
            and getattr(module, name, None) is (original := getattr(models, name))
        ]
        for module, name, original in patched:
            setattr(module, name, self._suspending(original))
        try:
            with self:
                yield self
        finally:
            for module, name, original in patched:
                setattr(module, name, original)
            for handle in handles:
                handle.remove()

    def _enter(self):
        self.depth += 1

    def _leave(self):
        self.depth -= 1

    def _suspending(self, factory):
        """``factory`` whose heads run with the count suspended."""

        def build(*args, **kwargs):
            head = factory(*args, **kwargs)
            if head is None:
                return None

            def run(hidden):
                self._enter()
                try:
                    return head(hidden)
                finally:
                    self._leave()

            return run

        return build


def _site() -> tuple[str, str, int]:
    """The innermost Python frame outside torch and this module: ``(path, function, line)``."""
    frame = sys._getframe(2)
    while frame is not None and (
        frame.f_code.co_filename.startswith(TORCH_DIR) or frame.f_code.co_filename == __file__
    ):
        frame = frame.f_back
    if frame is None:
        return "?", "?", 0
    path, function = frame.f_code.co_filename, frame.f_code.co_name
    if function.startswith("<") and frame.f_back is not None:  # a comprehension or lambda: within its function
        function = f"{frame.f_back.f_code.co_name}.{function}"
    path = path[len(str(ROOT)) + 1 :] if path.startswith(str(ROOT)) else path.rsplit("site-packages/", 1)[-1]
    return path, function, frame.f_lineno


def _qualified(func) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    for prefix, short in (
        ("_VariableFunctionsClass.", "torch."),
        ("_TensorBase.", "Tensor."),
        ("TensorBase.", "Tensor."),
    ):
        name = name.replace(prefix, short)
    return name


def count_calls(infiller, text: str) -> dict:
    """One default run on ``text`` under :class:`HostCalls`: its calls, attribute reads and sites."""
    counter = HostCalls(infiller.model)
    with counter.counting():
        result = infiller.sample(text, top=TOP, seed=0)
    calls, sequences = sum(counter.calls.values()), result.diagnostics.encoder_sequences
    return {
        "template": text,
        "blanks": text.count("[MASK]"),
        "sampler": result.diagnostics.sampler,
        "sequences": sequences,
        "calls": calls,
        "calls_per_sequence": calls / sequences,
        "attribute_reads": counter.attribute_reads,
        "sites": [[*site, name, n] for (site, name), n in counter.calls.most_common()],
    }


class Bare:
    """Bare passes of :data:`BARE_PASS` sequences of a template's shape through the encoder and the category
    head at one masked slot a sequence."""

    def __init__(self, infiller):
        from infill.lm.models import category_head

        self.infiller, self.model = infiller, infiller.model
        self.categories = infiller.category_ids()
        self.head = category_head(self.model, self.categories)
        self.generator = torch.Generator().manual_seed(0)

    def batch(self, text: str) -> tuple[torch.Tensor, torch.Tensor]:
        """``BARE_PASS`` sequences of ``text``'s shape, blanks filled at random, blank ``row % d`` masked."""
        t = self.infiller.parse(text)
        rows = torch.arange(BARE_PASS)
        ids = t.input_ids.repeat(BARE_PASS, 1)
        ids[:, t.blank_positions] = self.categories[
            torch.randint(len(self.categories), (BARE_PASS, t.num_blanks), generator=self.generator)
        ]
        slots = t.blank_positions[rows % t.num_blanks]
        ids[rows, slots] = t.mask_token_id
        return ids, slots

    @torch.inference_mode()
    def seconds(self, ids: torch.Tensor, slots: torch.Tensor, passes: int) -> tuple[float, float]:
        """Wall and CPU seconds of ``passes`` bare passes over ``ids (BARE_PASS, L)`` masked at ``slots``."""
        rows, start = torch.arange(len(ids)), clock()
        for _ in range(passes):
            hidden = self.model.base_model(input_ids=ids)[0][rows, slots]
            self.head(hidden) if self.head is not None else self.model(input_ids=ids)
        return since(start)


def clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def since(start: tuple[float, float]) -> tuple[float, float]:
    """Wall and CPU seconds (this process's: on a shared machine, without the waits for a core) since ``start``."""
    return tuple(now - then for now, then in zip(clock(), start))


def wall_rounds(bare: Bare, texts: list[str], rounds: int) -> list[dict]:
    """Each template's default and bare passes in turn, ``rounds`` times (module docstring): wall and CPU seconds
    per encoder sequence of each side, and their ratios. A first untimed run of each side warms up and counts the
    sequences (the default's run is the same every round)."""
    batches = {text: bare.batch(text) for text in texts}
    sequences = {}
    for text in texts:
        sequences[text] = bare.infiller.sample(text, top=TOP, seed=0).diagnostics.encoder_sequences
        bare.seconds(*batches[text], 1)
    rows = []
    for r in range(rounds):
        for text in texts:
            passes, timed = math.ceil(sequences[text] / BARE_PASS), {}
            for side in ("default", "bare") if r % 2 == 0 else ("bare", "default"):
                if side == "bare":
                    timed[side] = [t / (passes * BARE_PASS) for t in bare.seconds(*batches[text], passes)]
                    continue
                start = clock()
                result = bare.infiller.sample(text, top=TOP, seed=0)
                timed[side] = [t / result.diagnostics.encoder_sequences for t in since(start)]
            rows.append(
                {
                    "template": text,
                    "blanks": text.count("[MASK]"),
                    "round": r,
                    "sequences": sequences[text],
                    "default_per_sequence": timed["default"][0],
                    "bare_per_sequence": timed["bare"][0],
                    "ratio": timed["default"][0] / timed["bare"][0],
                    "default_cpu_per_sequence": timed["default"][1],
                    "bare_cpu_per_sequence": timed["bare"][1],
                    "ratio_cpu": timed["default"][1] / timed["bare"][1],
                }
            )
            log(f"{rows[-1]['blanks']} blanks: wall {rows[-1]['ratio']:.2f}x, cpu {rows[-1]['ratio_cpu']:.2f}x")
    return rows


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def summary(calls: list[dict], walls: list[dict], blanks: list[int], top: int) -> dict:
    """Per blank count: the runs, calls per sequence and the wall ratio; over every run, the functions that made
    the most calls, each with its lines' calls."""
    per_blanks = {}
    for b in blanks:
        mine = [row for row in calls if row["blanks"] == b]
        per_blanks[str(b)] = {
            "samplers": sorted({row["sampler"] for row in mine}),
            "sequences": spread([row["sequences"] for row in mine]),
            "calls_per_sequence": spread([row["calls_per_sequence"] for row in mine]),
            "attribute_reads_per_sequence": spread([row["attribute_reads"] / row["sequences"] for row in mine]),
            "wall_ratio": spread([row["ratio"] for row in walls if row["blanks"] == b]) if walls else None,
            "cpu_ratio": spread([row["ratio_cpu"] for row in walls if row["blanks"] == b]) if walls else None,
            "host_ms_per_sequence": spread(
                [1e3 * (w["default_cpu_per_sequence"] - w["bare_cpu_per_sequence"]) for w in walls if w["blanks"] == b]
            )
            if walls
            else None,
        }
    functions: dict[tuple[str, str], Counter] = {}
    for row in calls:
        for path, function, line, name, n in row["sites"]:
            functions.setdefault((path, function), Counter())[line, name] += n
    sequences = sum(row["sequences"] for row in calls)
    busiest = sorted(functions.items(), key=lambda item: -sum(item[1].values()))[:top]
    return {
        "blanks": per_blanks,
        "sequences": sequences,
        "calls_per_sequence": sum(row["calls"] for row in calls) / sequences,
        "functions": [
            {
                "path": path,
                "function": function,
                "calls": sum(lines.values()),
                "per_sequence": sum(lines.values()) / sequences,
                "lines": [[line, name, n] for (line, name), n in lines.most_common()],
            }
            for (path, function), lines in busiest
        ],
    }


def _cell(s: dict | None, digits: int = 2) -> str:
    if s is None:
        return "-"
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}-{s['max']:.{digits}f})"


def markdown(r: dict) -> str:
    rows = "\n".join(
        f"| {b} | {', '.join(s['samplers'])} | {_cell(s['sequences'], 0)} | {_cell(s['calls_per_sequence'])} | "
        f"{_cell(s['attribute_reads_per_sequence'])} | {_cell(s['wall_ratio'])} | {_cell(s['cpu_ratio'])} | "
        f"{_cell(s['host_ms_per_sequence'], 1)} |"
        for b, s in r["summary"]["blanks"].items()
    )
    sites = "\n".join(
        f"| `{f['path']}` `{f['function']}` | {f['per_sequence']:.2f} | "
        + ", ".join(f"{line} `{name}` {n}" for line, name, n in f["lines"][:LINES])
        + (" ..." if len(f["lines"]) > LINES else "")
        + " |"
        for f in r["summary"]["functions"]
    )
    a = r["settings"]
    return f"""# Host torch calls and wall of the default against a bare pass

Generated by `{r["command"]}` (the protocol is the module's docstring), {r["date"]}.
{signature(r["environment"])}.

Calls counted on `{a["model"]}`, {a["templates"]} template(s) a blank count, one run each; wall on it cut to its
first {a["layers"]} layers, {a["rounds"]} round(s), the sides in turn. Median (min-max) over templates (and rounds).
Targets: at most {CALLS_TARGET:g} host calls per encoder sequence; wall per sequence at most {WALL_TARGET:g}x a bare
pass of {BARE_PASS}.

| blank tokens | run | encoder sequences | host calls / sequence | attribute reads / sequence | wall / sequence over a bare pass's ({a["layers"]} layers) | CPU / sequence over a bare pass's | CPU ms / sequence beyond a bare pass's |
|---|---|---|---|---|---|---|---|
{rows}

## Where the calls are made

The functions that made the most calls, over every counted run ({r["summary"]["sequences"]} encoder sequences,
{r["summary"]["calls_per_sequence"]:.2f} calls a sequence in all): a call's site is the innermost Python frame outside
torch. Beside each, its busiest lines: line, the torch function or Tensor method, calls.

| function | calls / sequence | busiest lines |
|---|---|---|
{sites}
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(DEV_MODEL), help="a masked-LM checkpoint (default the dev MLM)")
    parser.add_argument("--blanks", default="2,3,4,6,8", help="blank counts, comma-separated (default 2,3,4,6,8)")
    parser.add_argument("--templates", type=int, default=2, help="templates a blank count (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the wall comparison (default 3; 0: none)")
    parser.add_argument("--layers", type=int, default=2, help="the fast encoder's layers (default 2)")
    parser.add_argument(
        "--sites", type=int, default=25, help="the functions reported that made the most calls (default 25)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "eval" / "host-calls-minilm")
    parser.add_argument("--markdown-only", action="store_true", help="re-summarize OUT/report.json, rewrite both")
    args = parser.parse_args(argv)
    try:
        blanks = sorted({int(b) for b in args.blanks.split(",")})
    except ValueError:
        parser.error(f"--blanks takes comma-separated integers, not {args.blanks!r}")
    if min(blanks) < 1 or args.templates < 1 or args.rounds < 0 or args.layers < 1 or args.sites < 1:
        parser.error("--blanks, --templates, --layers and --sites must be positive, --rounds at least 0")
    if args.markdown_only:
        report = json.loads((args.out / "report.json").read_text())
        report["summary"] = summary(report["calls"], report["walls"], report["settings"]["blanks"], args.sites)
    else:
        report = measure(args, blanks, argv)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "report.md").write_text(markdown(report))
    print(markdown(report))
    return 0


def measure(args, blanks: list[int], argv) -> dict:
    """The report of a run of ``args`` (module docstring)."""
    torch.set_num_threads(1)
    from infill import Infiller

    infiller = Infiller(args.model)
    texts = [t for b in blanks for t in templates(infiller.tokenizer, b, args.templates, infiller.max_length)]
    infiller.sample(texts[0], top=TOP, seed=0)  # warm-up
    calls = []
    for text in texts:
        calls.append(count_calls(infiller, text))
        log(f"{calls[-1]['blanks']} blanks: {calls[-1]['calls_per_sequence']:.2f} calls a sequence")
    walls = []
    if args.rounds:
        fast = Infiller(fast_encoder(args.model, args.layers), tokenizer=infiller.tokenizer)
        walls = wall_rounds(Bare(fast), texts, args.rounds)
    return {
        "command": " ".join(["python -m scripts.bench_host", *(sys.argv[1:] if argv is None else map(str, argv))]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "environment": environment(),
        "settings": {**vars(args), "model": Path(args.model).name, "out": str(args.out), "blanks": blanks},
        "summary": summary(calls, walls, blanks, args.sites),
        "calls": calls,
        "walls": walls,
    }


if __name__ == "__main__":
    sys.exit(main())
