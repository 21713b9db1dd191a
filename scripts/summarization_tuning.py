"""Choose the summarization defaults on ACLSum train or val (never test): mean ROUGE-1/2 F of greedy and
of the default chains for a grid of similarity x lambda x a, against sumy's LexRank, 150-word budget.

    OMP_NUM_THREADS=1 python scripts/summarization_tuning.py --split train --limit 60 > tuning-train.md
"""
from __future__ import annotations

import argparse
import itertools
import statistics

import torch

from infill.metrics import rouge
from infill.summarize import Budget, ChainSettings, ObjectiveConfig, SummaryObjective, greedy, run_chains
from infill.summarize.aclsum_data import load_aclsum
from infill.summarize.decoding import selected_sentences
from infill.summarize.peers import peer_summary
from infill.summarize.sentences import clean_sentences


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=["train", "val"], default="train")
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument("--similarity", default="tfidf,minilm")
    parser.add_argument("--lambdas", default="0,1,6")
    parser.add_argument("--a", default="5,10,13")
    args = parser.parse_args()
    torch.set_num_threads(1)
    grid = list(itertools.product(args.similarity.split(","), map(float, args.lambdas.split(",")),
                                  map(float, args.a.split(","))))
    scores = {}
    for doc in load_aclsum(args.split, args.limit):
        sentences = clean_sentences(doc.sentences).kept

        def score(key, objective, selection):
            r = rouge(" ".join(selected_sentences(objective, selection)), doc.reference)
            scores.setdefault(key, []).append((r["rouge1"]["fmeasure"], r["rouge2"]["fmeasure"]))

        base = SummaryObjective(sentences, Budget(150, "words"))
        score(("lexrank", "", "", ""), base, peer_summary(base, "lexrank"))
        for similarity, lam, a in grid:
            objective = SummaryObjective(sentences, Budget(150, "words"), ObjectiveConfig(a=a, lam=lam,
                                                                                          similarity=similarity))
            score(("greedy", similarity, lam, a), objective, greedy(objective))
            score(("mana", similarity, lam, a), objective, run_chains(objective, ChainSettings()).selections["best"])
    print(f"# Summarization defaults: ACLSum {args.split}, first {args.limit} documents, 150 words\n")
    print("Mean ROUGE F x100 (rouge-score, stemming); mana: default chains (from greedy, best F seen).\n")
    print("| method | similarity | lambda | a | R-1 F | R-2 F |\n|---|---|---|---|---|---|")
    for key, rows in sorted(scores.items(), key=lambda kv: -statistics.fmean(r[0] + r[1] for r in kv[1])):
        r1, r2 = (100 * statistics.fmean(r[i] for r in rows) for i in (0, 1))
        print("| " + " | ".join(map(str, key)) + f" | {r1:.2f} | {r2:.2f} |")


if __name__ == "__main__":
    main()
