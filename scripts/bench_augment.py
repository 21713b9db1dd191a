"""Augmentation against nlpaug's ``ContextualWordEmbsAug`` on the same masked LM: fluency, words changed,
diversity and speed, per sentence.

    python -m scripts.bench_augment [--model DIR] [--half tune|check] [--sentences 100] [--chunk 10] [--n 5]
                                    [--change 0.15] [--methods independent,independent/no-pll,nlpaug]
                                    [--nlpaug-p 0.15] [--seed 0] [--device cpu] [--out eval/augment-minilm]

Sentences: lines of ``../shared/corpora/bert-gen/wiki103.5k.txt`` and ``tbc.5k.txt`` taken in turn, line ``i`` of
each in the ``tune`` half when ``i`` is even and in the ``check`` half when it is odd (:func:`sentences`), kept
when they have 8 to 40 whitespace words, no ``@@UNKNOWN@@`` and at least 3 words ``infill.augment`` may change
(:func:`changeable`). Methods: ``infill.augment`` with each named one-pass ``sampler`` (``independent`` is the
default; ``NAME/no-pll`` with ``pll=False``), and nlpaug 1.1.11's ``ContextualWordEmbsAug(action="substitute", aug_p=--nlpaug-p)`` on the same
model, through nlpaug's own code (:func:`nlpaug_shim`: its private tokenizer calls, which transformers 5 dropped).
TextAttack's ``WordSwapMaskedLM`` is not run: it does not import beside transformers 5 (the study's README).

Speed: the sentences in chunks of ``--chunk``; each chunk runs every method, the method that goes first rotating
from chunk to chunk, in one process on one torch thread (wall seconds, ``time.perf_counter``), every method's
model on ``--device`` (``scripts.bench_gpu --augment`` runs it on a GPU). Then, per sentence
and method, with the same code for every method: the PLL of each variant (``Infiller.score``), the share of the
source's whitespace words changed (:func:`changed_share`: the words whose letters and digits the variant does not
keep, aligned ignoring case and spacing, so nlpaug's lowercased, re-spaced output counts only its substitutions),
self-BLEU among the variants (``infill.metrics.self_bleu`` on :func:`normalised` text) and the distinct variants
that differ from the source. Writes ``OUT/<half>.jsonl`` (a row a sentence, appended as each chunk finishes, so a
run resumes) and prints the half's summary as JSON; ``--report`` prints it again from the rows, measuring nothing.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path

from scripts.harness import CORPORA, DEV_MODEL, ROOT, Rows, environment, log

OUT = ROOT / "eval" / "augment-minilm"
FILES = ("wiki103.5k.txt", "tbc.5k.txt")
WORDS = (8, 40)
TIED = 1e-4
RUN = re.compile(r"[^\W_]+")
PIECE = re.compile(r"[^\W_]+|[^\w\s]")


def nlpaug_shim():
    """nlpaug 1.1.11's BERT wrapper calls the slow tokenizer's private ``_convert_token_to_id`` and
    ``_convert_id_to_token``, which transformers 5's tokenizers no longer have: the public calls in their place
    (the two lines below), nothing else of nlpaug changed."""
    import nlpaug.model.lang_models as nml

    nml.Bert.token2id = lambda self, token: self.tokenizer.convert_tokens_to_ids(token)
    nml.Bert.id2token = lambda self, _id: self.tokenizer.convert_ids_to_tokens(_id)


def sentences(half: str, count: int, tokenizer, categories, corpus_dir: Path = CORPORA) -> list[str]:
    """The first ``count`` sentences of ``half`` (the module's rule), the corpora taken in turn."""
    lines = [(corpus_dir / f).read_text(encoding="utf-8").splitlines() for f in FILES]
    out = []
    for i in range(1 if half == "check" else 0, max(map(len, lines)), 2):
        for corpus in lines:
            text = corpus[i].strip() if i < len(corpus) else ""
            if WORDS[0] <= len(text.split()) <= WORDS[1] and "@@" not in text:
                if changeable(text, tokenizer, categories) >= 3:
                    out.append(text)
                    if len(out) == count:
                        return out
    return out


def changeable(text: str, tokenizer, categories) -> int:
    """The words ``infill.augment`` may change in ``text``: unprotected, one token of the model's categories."""
    from infill.augmentation import words
    from infill.text.vocabulary import spelled

    open_words = [w for w in words.protected(text) if not w.why]
    if not open_words:
        return 0
    ids = spelled(tokenizer, [w.core(text) for w in open_words])
    return sum(len(s) == 1 and s[0] in categories for s in ids)


def normalised(text: str) -> str:
    """Lowercased words and punctuation marks, one space apart (nlpaug lowercases and re-spaces its output)."""
    return " ".join(PIECE.findall(text.casefold()))


def changed_share(source: str, variant: str) -> float:
    """The share of ``source``'s whitespace words (``infill.augmentation.words.split``) that ``variant`` changed:
    those with a run of letters or digits the variant does not keep (longest matching blocks, ignoring case)."""
    from infill.augmentation import words

    split = words.split(source)
    runs, owner = [], []
    for k, w in enumerate(split):
        for m in RUN.finditer(source[w.start : w.end].casefold()):
            runs.append(m.group())
            owner.append(k)
    other = RUN.findall(variant.casefold())
    kept = set()
    for a, _, size in difflib.SequenceMatcher(None, runs, other, autojunk=False).get_matching_blocks():
        kept.update(range(a, a + size))
    return len({owner[j] for j in range(len(runs)) if j not in kept}) / len(split)


class Methods:
    """Each method: a list of sentences in, each sentence's variant texts and encoder sequences out."""

    def __init__(
        self, model: str, names: list[str], n: int, change: float, nlpaug_p: float, seed: int, device: str = "cpu"
    ):
        import infill

        self.infiller = infill.Infiller(model, device)
        self.names, self.n, self.change, self.seed = names, n, change, seed
        if "nlpaug" in names:
            try:
                import nlpaug.augmenter.word as naw
            except ImportError:
                sys.exit("nlpaug is a benchmark dependency: pip install 'infill-mcmc[bench]'")
            nlpaug_shim()
            self.nlpaug = naw.ContextualWordEmbsAug(
                model_path=model, model_type="bert", action="substitute", aug_p=nlpaug_p, device=device
            )
            self.nlpaug_passes = 0
            self.nlpaug.model.model.register_forward_hook(self._count)

    def _count(self, module, args, output) -> None:
        self.nlpaug_passes += output.logits.shape[0]

    def run(self, name: str, texts: list[str]) -> list[tuple[list[str], int]]:
        if name != "nlpaug":
            sampler, _, unscored = name.partition("/")  # NAME/no-pll: augment(pll=False)
            found = self.infiller.augment(texts, self.n, self.change, self.seed, sampler=sampler, pll=not unscored)
            return [([v.text for v in variants], variants.encoder_sequences) for variants in found]
        import numpy as np
        import torch

        from infill.augmentation.words import seed_of

        out = []
        for text in texts:
            seed = seed_of(self.seed, text) % 2**31  # per sentence, as infill.augment seeds its choice
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            before = self.nlpaug_passes
            variants = self.nlpaug.augment(text, n=self.n)
            out.append((list(variants), self.nlpaug_passes - before))
        return out


def measure(methods: Methods, texts: list[str], first: int, chunk: int) -> list[dict]:
    """One chunk: every method on ``texts`` (the ``first``-th method first, then in turn), timed, then scored."""
    names = methods.names[first:] + methods.names[:first]
    seconds, found = {}, {}
    for name in names:
        start = time.perf_counter()
        found[name] = methods.run(name, texts)
        seconds[name] = time.perf_counter() - start
    rows = [{"source": t, "methods": {}} for t in texts]
    for name in methods.names:
        for row, (variants, passes) in zip(rows, found[name]):
            row["methods"][name] = record(methods, row["source"], variants, passes)
    for row in rows:
        row["chunk"], row["chunk_seconds"] = chunk, seconds
        row["chunk_sentences"] = len(texts)
    return rows


def record(methods: Methods, source: str, variants: list[str], passes: int) -> dict:
    from infill.metrics import self_bleu

    plain = normalised(source)
    distinct = {normalised(v) for v in variants} - {plain}
    plls = [s.total for s in methods.infiller.score(variants)] if variants else []
    texts = [normalised(v) for v in variants]
    return {
        "variants": variants,
        "pll": plls,
        "changed": [changed_share(source, v) for v in variants],
        "self_bleu": 100 * self_bleu(texts) if len(texts) > 1 else None,
        "distinct": len(distinct),
        "encoder_sequences": passes,
    }


def summary(rows: list[dict], names: list[str], n: int, change: float) -> dict:
    """Medians per method, the share of sentences with ``n`` distinct variants, the mean share of words changed,
    sentences a second per chunk (median, min, max) and, against every other method, the ratio of sentences a
    second within each chunk (median, min, max: both sides under the same machine load) and the PLL wins."""
    out = {"sentences": len(rows), "methods": {}}
    chunk_rows = list({r["chunk"]: r for r in rows}.values())
    for name in names:
        per = [r["methods"][name] for r in rows]
        speed = [r["chunk_sentences"] / r["chunk_seconds"][name] for r in chunk_rows]
        changed = [c for p in per for c in p["changed"]]
        variants = sum(len(p["variants"]) for p in per)
        out["methods"][name] = {
            "pll_median": statistics.median(statistics.fmean(p["pll"]) for p in per if p["pll"]),
            "changed_mean": statistics.fmean(changed),
            "changed_median": statistics.median(changed),
            "self_bleu_median": statistics.median(p["self_bleu"] for p in per if p["self_bleu"] is not None),
            "all_distinct": statistics.fmean(p["distinct"] >= n for p in per),
            "distinct_mean": statistics.fmean(p["distinct"] for p in per),
            "sentences_per_s": {"median": statistics.median(speed), "min": min(speed), "max": max(speed)},
            "sentences_per_s_total": sum(r["chunk_sentences"] for r in chunk_rows)
            / sum(r["chunk_seconds"][name] for r in chunk_rows),
            "encoder_sequences_per_variant": sum(p["encoder_sequences"] for p in per) / max(variants, 1),
        }
    out["wins"] = {}
    for a in names:
        for b in names:
            if a == b:
                continue
            diffs = [
                statistics.fmean(r["methods"][a]["pll"]) - statistics.fmean(r["methods"][b]["pll"])
                for r in rows
                if r["methods"][a]["pll"] and r["methods"][b]["pll"]
            ]
            untied = [d for d in diffs if abs(d) > TIED]
            bleu = [
                r["methods"][a]["self_bleu"] - r["methods"][b]["self_bleu"]
                for r in rows
                if r["methods"][a]["self_bleu"] is not None and r["methods"][b]["self_bleu"] is not None
            ]
            ratios = [r["chunk_seconds"][b] / r["chunk_seconds"][a] for r in chunk_rows]
            out["wins"][f"{a} vs {b}"] = {
                "speed_ratio": {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)},
                "pll_wins": sum(d > 0 for d in untied) / max(len(untied), 1),
                "untied": len(untied),
                "pll_median_difference": statistics.median(diffs) if diffs else None,
                "self_bleu_median_difference": statistics.median(bleu) if bleu else None,
            }
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(DEV_MODEL))
    parser.add_argument("--half", choices=("tune", "check"), default="tune")
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--chunk", type=int, default=10)
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--change", type=float, default=0.15)
    parser.add_argument("--methods", default="independent,independent/no-pll,nlpaug")
    parser.add_argument("--nlpaug-p", type=float, default=0.15)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="every method's model on it (default cpu)")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--report", action="store_true", help="summarise OUT/<half>.jsonl, measuring nothing")
    args = parser.parse_args(argv)
    names = args.methods.split(",")
    rows = Rows(Path(args.out) / f"{args.half}.jsonl", key=lambda r: r["index"])
    import torch

    torch.set_num_threads(1)  # the measurement's setting, in the report's signature too
    if not args.report:
        methods = Methods(args.model, names, args.n, args.change, args.nlpaug_p, args.seed, args.device)
        tokenizer = methods.infiller.tokenizer
        texts = sentences(args.half, args.sentences, tokenizer, set(methods.infiller.category_ids().tolist()))
        methods.run(names[0], texts[:1])  # warm-up, not timed
        done = rows.done()
        for k, start in enumerate(range(0, len(texts), args.chunk)):
            if start in done:
                continue
            chunk = texts[start : start + args.chunk]
            for j, row in enumerate(measure(methods, chunk, k % len(names), k)):
                rows.append({"index": start + j, **row})
            log(f"{args.half}: {start + len(chunk)}/{len(texts)} sentences")
    found = rows.read()
    report = summary(found, names, args.n, args.change)
    report["settings"] = {k: v for k, v in vars(args).items() if k not in ("report", "out")}
    report["environment"] = environment(model=Path(args.model).name)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
