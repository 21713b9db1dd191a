"""Start-up of ``infill sample``: wall and CPU time to the first filling, two source trees interleaved, and
where that time goes.

    git worktree add /tmp/startup-base HEAD      # the tree to compare against, before changing anything
    python -m scripts.bench_startup [--base /tmp/startup-base] [--new .] [--pairs 10] [--out eval/startup/startup]

Each run is ``python -m infill sample TEMPLATE --model MODEL --top 5 --seed 0`` in a fresh process, with
``PYTHONPATH`` and the working directory set to one tree and ``HF_HUB_OFFLINE=1``. The first filling is the
first line on its stdout: the wall time is taken when it arrives and the CPU time (user + system, every
thread) from ``/proc/PID/stat`` at that moment; the whole run's totals come from ``wait4``. Runs alternate
between the trees, the order flipped every pair, so that the load of a shared machine falls on both alike;
medians and the min-max spread are reported, with every run in the JSON. Each tree's modules are
byte-compiled first, so that neither pays for compiling its own sources.

The stages (``--stages`` runs per tree, interleaved too) repeat in one process what the command does, in its
order, timing each: parsing the run settings (which imports torch and the samplers), the tokenizer and the
model's configuration (which import transformers), checking the template (the vocabulary table), importing
the model's code (of it, separately: ``torch._dynamo``, which transformers' masking code imports, and
``scipy.optimize``, which its object-detection loss imports where scipy is installed), building the model and
reading its weights, and the first filling. Every run's fillings must be the same.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts.harness import DEV_MODEL, ROOT, cpu_model

TEMPLATE = "he had not, after all, [MASK] me the chance ."
OPTIONS = ("--top", "5", "--seed", "0")
TICK = os.sysconf("SC_CLK_TCK")
STAGES = (
    "run settings (torch, samplers)",
    "tokenizer and config (transformers)",
    "template checked (vocabulary)",
    "model code: torch._dynamo",
    "model code: scipy.optimize",
    "model code: the rest",
    "model built, weights read",
    "first filling",
)


def _cpu_of(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _env(tree: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}


def cli_run(tree: Path, model: Path, template: str) -> dict:
    """One ``infill sample`` process: wall and CPU seconds to its first line and in all, and its stdout."""
    with tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "infill", "sample", template, "--model", str(model), *OPTIONS],
            cwd=tree,
            env=_env(tree),
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        first = child.stdout.readline()
        first_wall, first_cpu = time.perf_counter() - start, _cpu_of(child.pid)
        rest = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            err.seek(0)
            raise SystemExit(f"{tree}: infill sample failed: {err.read().strip()[-500:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return {"first_wall": first_wall, "first_cpu": first_cpu, "wall": wall, "cpu": cpu, "stdout": first + rest}


def probe(model: str, template: str) -> None:
    """``--probe``: the stages of :data:`STAGES` in this process, printed as one JSON line."""
    marks, clock = {}, [time.perf_counter(), time.process_time()]

    def mark(stage: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        marks[stage] = {"wall": wall - clock[0], "cpu": cpu - clock[1]}
        clock[:] = [wall, cpu]

    from infill.cli import build_parser
    from infill.cli.sample import cli_options

    args = build_parser("sample").parse_args(["sample", template, "--model", model, *OPTIONS])
    from infill.pipeline.config import RunConfig

    config = RunConfig.create(**cli_options(args))
    mark(STAGES[0])
    from infill.lm import models
    from infill.pipeline.infiller import Infiller
    from infill.pipeline.prepare import prepare

    tokenizer = models.load_tokenizer(model)
    model_config = models.load_config(model)
    mark(STAGES[1])
    prepared = prepare([template], config, tokenizer, models.max_length(tokenizer, model_config))
    mark(STAGES[2])
    import torch._dynamo  # noqa: F401

    mark(STAGES[3])
    if importlib.util.find_spec("scipy") is not None:
        import scipy.optimize  # noqa: F401
    mark(STAGES[4])
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING

    MODEL_FOR_MASKED_LM_MAPPING[type(model_config)]
    mark(STAGES[5])
    infiller = Infiller(model, tokenizer=tokenizer)
    mark(STAGES[6])
    _, result = next(infiller.stream(prepared))
    mark(STAGES[7])
    print(json.dumps({"stages": marks, "texts": result.texts}))


def stage_run(tree: Path, model: Path, template: str) -> dict:
    """:func:`probe` in a fresh process whose ``infill`` is the tree's (this checkout's ``scripts`` after it)."""
    env = {**_env(tree), "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--probe", "--model", str(model), "--template", template],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"{tree}: the stage probe failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.splitlines()[-1])


def summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def _span(s: dict, digits: int = 2) -> str:
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}-{s['max']:.{digits}f})"


def report(results: dict) -> str:
    base, new = results["trees"]["base"], results["trees"]["new"]
    lines = [
        "# Start-up of `infill sample` to the first filling",
        "",
        f"`python -m scripts.bench_startup --pairs {results['pairs']} --stages {results['stage_runs']}` on "
        f'{results["machine"]}: `infill sample "{results["template"]}" --model {results["model"]} '
        f"{' '.join(OPTIONS)}`, a fresh process per run, the two trees alternated (order flipped every pair). "
        "Seconds: median (min-max). CPU is user + system over every thread.",
        "",
        f"- base: `{base['path']}` ({base['label']})",
        f"- new: `{new['path']}` ({new['label']})",
        f"- same fillings in every run of both trees: {'yes' if results['same_fillings'] else 'NO'}",
        "",
        "| | base | new | new / base (median of pairs) |",
        "|---|---|---|---|",
    ]
    for key, name in (
        ("first_wall", "wall to first filling"),
        ("first_cpu", "CPU to first filling"),
        ("wall", "wall, whole run"),
        ("cpu", "CPU, whole run"),
    ):
        lines.append(f"| {name} | {_span(base[key])} | {_span(new[key])} | {_span(results['ratios'][key])} |")
    lines += [
        "",
        f"## Where the time goes (new tree, {results['stage_runs']} runs of the stage probe)",
        "",
        "| stage | wall | CPU | share of CPU |",
        "|---|---|---|---|",
    ]
    total = sum(s["cpu"]["median"] for s in new["stages"].values())
    for stage, s in new["stages"].items():
        lines.append(f"| {stage} | {_span(s['wall'])} | {_span(s['cpu'])} | {s['cpu']['median'] / total:.0%} |")
    lines.append(f"| sum of medians | | {total:.2f} | |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=Path("/tmp/startup-base"))
    parser.add_argument("--new", type=Path, default=ROOT)
    parser.add_argument("--pairs", type=int, default=10, help="runs of each tree, interleaved")
    parser.add_argument("--stages", type=int, default=5, help="runs of the stage probe per tree")
    parser.add_argument("--model", type=Path, default=DEV_MODEL)
    parser.add_argument("--template", default=TEMPLATE)
    parser.add_argument("--out", type=Path, help="write OUT.json and OUT.md")
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        return probe(str(args.model), args.template)
    trees = {"base": args.base.resolve(), "new": args.new.resolve()}
    for tree in trees.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "infill")], check=True)
    runs = {name: [] for name in trees}
    stages = {name: [] for name in trees}
    for i in range(max(args.pairs, args.stages)):
        order = list(trees) if i % 2 == 0 else list(trees)[::-1]
        for name in order:
            if i < args.pairs:
                runs[name].append(cli_run(trees[name], args.model, args.template))
                print(
                    f"{name} {i}: first filling {runs[name][-1]['first_wall']:.2f} s wall, "
                    f"{runs[name][-1]['first_cpu']:.2f} s CPU",
                    file=sys.stderr,
                )
            if i < args.stages:
                stages[name].append(stage_run(trees[name], args.model, args.template))
    outputs = {run["stdout"] for name in trees for run in runs[name]}
    outputs |= {"\n".join(s["texts"]) + "\n" for name in trees for s in stages[name]}
    results = {
        "template": args.template,
        "model": args.model.name,
        "pairs": args.pairs,
        "stage_runs": args.stages,
        "machine": f"{cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "same_fillings": len(outputs) == 1,
        "fillings": sorted(outputs),
        "trees": {
            name: {
                "path": str(tree),
                "label": _label(tree),
                **{key: summary([r[key] for r in runs[name]]) for key in ("first_wall", "first_cpu", "wall", "cpu")},
                "stages": {
                    stage: {k: summary([s["stages"][stage][k] for s in stages[name]]) for k in ("wall", "cpu")}
                    for stage in STAGES
                },
                "runs": [{k: v for k, v in r.items() if k != "stdout"} for r in runs[name]],
            }
            for name, tree in trees.items()
        },
        "ratios": {
            key: summary([n[key] / b[key] for b, n in zip(runs["base"], runs["new"])])
            for key in ("first_wall", "first_cpu", "wall", "cpu")
        },
    }
    text = report(results)
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
        args.out.with_suffix(".md").write_text(text)
    print(text)


def _label(tree: Path) -> str:
    """The tree's commit, and whether it has changes not committed."""
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    )
    return f"{head.stdout.strip() or 'no commit'}{' with uncommitted changes' if dirty.stdout.strip() else ''}"


if __name__ == "__main__":
    main()
