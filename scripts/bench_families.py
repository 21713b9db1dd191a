"""Cost of the prediction head per masked-LM family: the PLL energy's value_and_grad at real-size shapes
(random weights, no download) with the family's head run only at the blank slots (``infill.lm.models.HEADS``),
against the same head collected into one module (the single-module case, the goal is within 1.1x) and
against the full-logits fallback of an unknown architecture.

    python -m scripts.bench_families [--families distilbert modernbert] [--repeats 5] [--out eval/families/families.json]

Each call is timed in CPU seconds of this process on one thread (``time.process_time``), which load from
other processes on a shared machine disturbs far less than wall time; sides are interleaved within each
repeat so that what load remains hits all alike. Medians and the min-max spread are printed as Markdown.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import transformers as tf
from torch import nn

from infill.energies import MaskedLMEnergy, one_hot
from scripts.harness import environment

# Real-size configurations (those of the hub checkpoints named), random weights.
CONFIGS = {
    "distilbert": ("distilbert-base-uncased", lambda: tf.DistilBertConfig()),
    "electra": (
        "google/electra-base-generator",
        lambda: tf.ElectraConfig(embedding_size=768, hidden_size=256, num_attention_heads=4, intermediate_size=1024),
    ),
    "modernbert": ("answerdotai/ModernBERT-base", lambda: tf.ModernBertConfig()),
    "deberta-v3": (
        "microsoft/deberta-v3-base",
        lambda: tf.DebertaV2Config(
            vocab_size=128100,
            relative_attention=True,
            position_buckets=256,
            norm_rel_ebd="layer_norm",
            share_att_key=True,
            pos_att_type=["p2c", "c2p"],
            max_relative_positions=-1,
            position_biased_input=False,
            type_vocab_size=0,
            legacy=False,
        ),
    ),
}


class DebertaHead(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.head, self.embeddings = model.lm_predictions, model.deberta.embeddings.word_embeddings

    def forward(self, hidden):
        return self.head(hidden, self.embeddings)


def single_module(family: str, model) -> nn.Module:
    """The family's head as one module, as BERT's ``cls`` is."""
    return {
        "distilbert": lambda m: nn.Sequential(m.vocab_transform, m.activation, m.vocab_layer_norm, m.vocab_projector),
        "electra": lambda m: nn.Sequential(m.generator_predictions, m.generator_lm_head),
        "modernbert": lambda m: nn.Sequential(m.head, m.decoder),
        "deberta-v3": DebertaHead,
    }[family](model)


def sides(family: str, chains: int, blanks: int, length: int) -> dict:
    torch.manual_seed(0)
    model = tf.AutoModelForMaskedLM.from_config(CONFIGS[family][1]()).eval()
    vocab = model.config.vocab_size
    ids = torch.randint(1000, vocab, (length,))
    positions = torch.arange(2, 2 + 2 * blanks, 2)
    energies = {
        name: MaskedLMEnergy(model, ids, positions, torch.arange(5, vocab), 4) for name in ("adapter", "single", "full")
    }
    single, categories = single_module(family, model), energies["single"].category_ids
    energies["single"]._head = lambda hidden: single(hidden)[..., categories]  # the head over the categories
    energies["full"]._head = None
    x = one_hot(torch.randint(vocab - 5, (chains, blanks), generator=torch.Generator().manual_seed(0)), vocab - 5)
    values = {name: e.value_and_grad(x)[0] for name, e in energies.items()}
    assert all(torch.allclose(v, values["full"], rtol=1e-4, atol=1e-3) for v in values.values()), values
    return energies, x


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chains", type=int, default=5)
    parser.add_argument("--blanks", type=int, default=3)
    parser.add_argument("--length", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = []
    print(
        "| family (shape of) | adapter CPU s | single module CPU s | full logits CPU s | adapter / single | "
        "full / adapter |"
    )
    print("|---|---|---|---|---|---|")
    for family in args.families:
        energies, x = sides(family, args.chains, args.blanks, args.length)
        times = {name: [] for name in energies}
        for _ in range(args.repeats):
            for name, energy in energies.items():
                start = time.process_time()
                energy.value_and_grad(x)
                times[name].append(time.process_time() - start)
        median = {name: statistics.median(t) for name, t in times.items()}
        spread = {name: (min(t), max(t)) for name, t in times.items()}
        rows.append(dict(family=family, checkpoint=CONFIGS[family][0], median_s=median, min_max_s=spread))
        cell = lambda n: f"{median[n]:.3f} ({spread[n][0]:.3f}-{spread[n][1]:.3f})"  # noqa: E731
        print(
            f"| {family} ({CONFIGS[family][0]}) | {cell('adapter')} | {cell('single')} | {cell('full')} | "
            f"{median['adapter'] / median['single']:.2f} | {median['full'] / median['adapter']:.2f} |"
        )
    setup = dict(chains=args.chains, blanks=args.blanks, length=args.length, repeats=args.repeats, **environment())
    print(
        f"\n{args.chains} chains x {args.blanks} blanks = {args.chains * args.blanks} masked copies of "
        f"{args.length} tokens, {args.threads} threads, {args.repeats} interleaved repeats; "
        f"torch {torch.__version__}, transformers {tf.__version__}"
    )
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(setup=setup, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
