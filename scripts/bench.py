"""Speed and memory of the core, measured side by side in one run, against the project's goals.

    python -m scripts.bench [--models bert-base,dev] [--repeat 3] [--device cpu] [--templates 12] [--json]

Models (``harness.load_model``): ``bert-base`` is bert-base-uncased's shape with random weights, ``dev`` is
``../shared/models/infill-dev-minilm-mlm``, ``proxy`` a tiny random BERT (a smoke test's). The problem is
25 chains x 4 blanks in a 32-token template. Each time is the median of ``--repeat`` runs after a warm-up
(of ``--repeat // 2`` for the slow one-chain-at-a-time baseline).

Pipeline overhead: on ``--templates`` bert-gen sentences (12-20 words, 3 words masked; wiki103.5k, fixed
seed) the default run (``infill sample --top 5``) and 25 left-to-right draws re-ranked by PLL run one after
the other per template, on the dev MLM; the ratio of their wall time per encoder sequence is reported as a
median with its spread (the machine is shared: only the interleaved ratio means anything). Corpus BLEU: the
seconds to score 100 hypotheses (the first bert-gen lines) against ``--bleu-refs`` references (the last).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer

from infill import metrics
from infill.energies import MaskedLMEnergy, one_hot, value_and_grad
from infill.samplers import make_sampler, sample
from infill.text.vocabulary import sampleable_token_ids
from scripts.harness import CORPORA, CORPUS_FILES, DEV_MODEL, ROOT, environment, load_model

CHAINS, BLANKS, LENGTH = 25, 4, 32
GOALS = {  # name -> (comparison, bound)
    "dmala_step_over_value_and_grad": ("<=", 1.10),
    "pll_value_and_grad_over_forward": ("<=", 2.2),
    "batched_over_sequential_chain_steps": (">=", 1.0),
    "dmala_peak_rss_gb": ("<=", 2.0),
    "gibbs_step_over_chains_forward": ("<=", 1.3),
    "default_over_left_to_right_seconds_per_sequence": ("<=", 1.2),
}
CORPUS = CORPORA / CORPUS_FILES["wt103"]
MODELS = ("bert-base", "dev", "proxy")


def load(name: str, device: str):
    return load_model(DEV_MODEL if name == "dev" else name, device)


def problem(model, tokenizer, chains: int = CHAINS, seed: int = 0, chunk_size=None):
    """A 32-token template with 4 blanks spread over it, and the MLM energy on it."""
    g = torch.Generator().manual_seed(seed)
    categories = sampleable_token_ids(tokenizer)
    ids = categories[torch.randint(len(categories), (LENGTH,), generator=g)]
    ids[0], ids[-1] = tokenizer.cls_token_id, tokenizer.sep_token_id
    blanks = torch.tensor([4, 11, 19, 27])
    ids[blanks] = tokenizer.mask_token_id
    energy = MaskedLMEnergy(model, ids, blanks, categories, tokenizer.mask_token_id, chunk_size)
    x0 = torch.randint(len(categories), (chains, BLANKS), generator=g)
    return energy, x0


def timed(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(name: str, tokenizer, device: str, repeat: int) -> dict:
    model = load(name, device)
    energy, x0 = problem(model, tokenizer)
    x0 = x0.to(device)
    k = energy.num_categories
    generator = torch.Generator(device).manual_seed(0)
    dmala = make_sampler("dmala", step_size=0.1).sampler  # the kernel at a fixed step size
    state = dmala.init(energy, x0)
    copies = energy.token_ids(x0).repeat_interleave(BLANKS, dim=0)  # the (chains x blanks) batch

    def forward(ids):
        with torch.inference_mode():
            model.base_model(input_ids=ids)

    def forward_backward(ids):
        """The floor for any input gradient: encoder forward and backward to the input embeddings."""
        embeds = model.get_input_embeddings()(ids).requires_grad_(True)
        torch.autograd.grad(model.base_model(inputs_embeds=embeds)[0][:, 0].sum(), embeds)

    vg = timed(lambda: value_and_grad(energy, one_hot(x0, k)), repeat)
    step = timed(lambda: dmala.step(energy, state, generator), repeat)
    encoder = timed(lambda: forward(copies), repeat)
    encoder_backward = timed(lambda: forward_backward(copies), repeat)
    chains_forward = timed(lambda: forward(energy.token_ids(x0)), repeat)
    gibbs = make_sampler("gibbs")
    gibbs_state = gibbs.init(energy, x0)
    gibbs_step = timed(lambda: gibbs.step(energy, gibbs_state, generator), repeat)
    single = [dmala.init(energy, x0[c : c + 1]) for c in range(CHAINS)]
    sequential = timed(lambda: [dmala.step(energy, s, generator) for s in single], max(1, repeat // 2))
    return {
        "model": name,
        "value_and_grad_s": vg,
        "dmala_step_s": step,
        "encoder_forward_chains_x_blanks_s": encoder,
        "encoder_forward_backward_chains_x_blanks_s": encoder_backward,
        "gibbs_step_s": gibbs_step,
        "encoder_forward_chains_s": chains_forward,
        "sequential_25_single_chain_steps_s": sequential,
        "dmala_step_over_value_and_grad": step / vg,
        "pll_value_and_grad_over_forward": vg / encoder,
        "encoder_forward_backward_over_forward": encoder_backward / encoder,
        "batched_over_sequential_chain_steps": sequential / step,
        "gibbs_step_over_chains_forward": gibbs_step / chains_forward,
    }


def held_out_templates(count: int, seed: int = 7) -> list[str]:
    """``count`` bert-gen sentences of 12-20 words, each with 3 of its words (not the first) made blanks."""
    import random

    rng = random.Random(seed)
    lines = [line.split() for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    lines = [words for words in lines if 12 <= len(words) <= 20 and all(w.isalpha() or not w.isalnum() for w in words)]
    templates = []
    for words in rng.sample(lines, count):
        for i in rng.sample([i for i, w in enumerate(words) if w.isalpha() and i > 0], 3):
            words[i] = "[MASK]"
        templates.append(" ".join(words))
    return templates


def pipeline_overhead(device: str, count: int) -> dict:
    """Wall time per encoder sequence of the default run over left-to-right's, interleaved per template."""
    from infill import Infiller
    from infill.pipeline.config import RunConfig

    infiller = Infiller(str(DEV_MODEL), device=device)
    rows = {
        "default": RunConfig.create(top=5, seed=0),
        "left-to-right": RunConfig.create(method="left-to-right", top=5, seed=0),
    }
    infiller.run(held_out_templates(1, seed=99), rows["default"])  # warm-up
    ratios, per_row = [], {name: [] for name in rows}
    for template in held_out_templates(count):
        cost = {}
        for name, config in rows.items():
            start = time.perf_counter()
            (result,) = infiller.run([template], config)
            seconds = time.perf_counter() - start
            cost[name] = seconds / result.diagnostics.encoder_sequences
            per_row[name].append((seconds, result.diagnostics.encoder_sequences))
        ratios.append(cost["default"] / cost["left-to-right"])
    return {
        "templates": count,
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "ratios": ratios,
        "runs": per_row,
    }


def corpus_bleu_timing(n_hyp: int = 100, n_ref: int = 10000) -> dict:
    """Seconds to score ``n_hyp`` hypotheses against ``n_ref`` references (reference statistics included):
    the first and the last lines of the bert-gen corpora (WikiText-103 then TBC)."""
    lines = []
    for name in CORPUS_FILES.values():
        lines += (CORPORA / name).read_text(encoding="utf-8").splitlines()
    hypotheses, references = lines[:n_hyp], lines[-n_ref:]
    start = time.perf_counter()
    corpus = metrics.ReferenceCorpus(references)
    prepared = time.perf_counter()
    bleu = metrics.corpus_bleu(hypotheses, corpus)
    done = time.perf_counter()
    return {
        "n_hyp": n_hyp,
        "n_ref": n_ref,
        "bleu": bleu,
        "reference_seconds": prepared - start,
        "scoring_seconds": done - prepared,
        "seconds": done - start,
    }


def peak_rss_child(model: str, device: str, steps: int, chunk_size: int) -> None:
    """In a fresh process: a 25-chain DMALA run on ``model`` (bert-base's shape); prints the peak RSS in GB."""
    tokenizer = AutoTokenizer.from_pretrained(DEV_MODEL)
    energy, x0 = problem(load(model, device), tokenizer, chunk_size=chunk_size or None)
    sample(make_sampler("dmala", step_size=0.1), energy, x0.to(device), steps)
    # VmHWM, not ru_maxrss: the latter keeps the high-water mark of the parent forked before exec
    status = Path("/proc/self/status").read_text()
    print(int(status.split("VmHWM:")[1].split()[0]) / 2**20)


def peak_rss(model: str, device: str, steps: int, chunk_size: int) -> float:
    """Peak RSS in GB of :func:`peak_rss_child` (``chunk_size`` 0: all copies in one pass)."""
    command = [
        sys.executable,
        "-m",
        "scripts.bench",
        "--rss-child",
        "--rss-model",
        model,
        "--device",
        device,
        "--steps",
        str(steps),
        "--chunk-size",
        str(chunk_size),
    ]
    out = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
    return float(out.stdout.strip().splitlines()[-1])


def verdict(key: str, value: float) -> str:
    op, bound = GOALS[key]
    ok = value <= bound if op == "<=" else value >= bound
    return f"{'ok ' if ok else 'MISS'} (goal {op} {bound})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="bert-base,dev")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=3, help="DMALA steps of the peak-memory run")
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=25,
        help="copies per forward/backward chunk in the peak-memory run (default 25)",
    )
    parser.add_argument("--templates", type=int, default=12, help="templates of the pipeline overhead measure")
    parser.add_argument("--rss-model", default="bert-base", choices=MODELS, help="the peak-memory run's model")
    parser.add_argument("--bleu-refs", type=int, default=10000, help="references of the corpus BLEU timing")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rss-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        return peak_rss_child(args.rss_model, args.device, args.steps, args.chunk_size)
    unknown = set(args.models.split(",")) - set(MODELS)
    if unknown:
        parser.error(f"unknown model {sorted(unknown)[0]!r}; choose from {', '.join(MODELS)}")
    tokenizer = AutoTokenizer.from_pretrained(DEV_MODEL)
    report = {
        "machine": environment(device=args.device),
        "problem": {"chains": CHAINS, "blanks": BLANKS, "tokens": LENGTH, "repeat": args.repeat},
        "models": [measure(name, tokenizer, args.device, args.repeat) for name in args.models.split(",")],
        "dmala_peak_rss_gb_one_pass": peak_rss(args.rss_model, args.device, args.steps, 0),
        "dmala_peak_rss_gb": peak_rss(args.rss_model, args.device, args.steps, args.chunk_size),
        "corpus_bleu": corpus_bleu_timing(n_ref=args.bleu_refs),
        "pipeline": pipeline_overhead(args.device, args.templates),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"machine: {report['machine']}\nproblem: {report['problem']}\n")
    for m in report["models"]:
        print(f"[{m['model']}]")
        for key, value in m.items():
            if key != "model":
                print(f"  {key:40s} {value:9.3f}  {verdict(key, value) if key in GOALS else ''}")
    rss, one_pass = report["dmala_peak_rss_gb"], report["dmala_peak_rss_gb_one_pass"]
    print(
        f"\npeak RSS, {args.rss_model} DMALA 25 chains, {args.chunk_size} copies per chunk: {rss:.3f} GB  "
        f"{verdict('dmala_peak_rss_gb', rss)}; all 100 copies in one pass: {one_pass:.3f} GB"
    )
    pipe = report["pipeline"]
    print(
        f"default / left-to-right wall time per encoder sequence, {pipe['templates']} templates: median "
        f"{pipe['ratio_median']:.2f} (spread {pipe['ratio_min']:.2f}-{pipe['ratio_max']:.2f})  "
        f"{verdict('default_over_left_to_right_seconds_per_sequence', pipe['ratio_median'])}"
    )
    bleu = report["corpus_bleu"]
    print(f"corpus BLEU {bleu['n_hyp']} hyps x {bleu['n_ref']} refs: {bleu['seconds']:.2f} s (BLEU {bleu['bleu']:.4f})")


if __name__ == "__main__":
    main()
