"""Peer summarizers from sumy (LexRank, TextRank, Luhn, LSA) on our own sentences and budget.

sumy's tokenizer needs NLTK's punkt data, which may not be downloadable, so its document objects are
built from our sentence split with a regex word tokenizer; words are stemmed with sumy's (NLTK
Snowball) English stemmer and sumy's English stop words are removed. Each summarizer ranks the
sentences; sentences are taken in rank order while they fit in the budget (a sentence that does not
fit is skipped), and the summary keeps document order.
"""

from __future__ import annotations

import importlib.util
import re

import torch
from torch import Tensor

from .objective import SummaryObjective

PEERS = {
    "lexrank": "lex_rank.LexRankSummarizer",
    "textrank": "text_rank.TextRankSummarizer",
    "luhn": "luhn.LuhnSummarizer",
    "lsa": "lsa.LsaSummarizer",
}
REQUIREMENT = "sumy>=0.11"


def available() -> bool:
    """Whether sumy is installed."""
    return importlib.util.find_spec("sumy") is not None


class _Words:
    """sumy's tokenizer interface, without NLTK data: words are runs of letters, digits, ``-`` and ``'``."""

    language = "english"

    @staticmethod
    def to_words(sentence: str) -> list[str]:
        return re.findall(r"\w[\w'-]*", sentence)


def peer_summary(objective: SummaryObjective, method: str) -> Tensor:
    """The ``(N,)`` 0/1 selection of sumy's ``method`` (a key of :data:`PEERS`) within the budget."""
    import importlib

    from sumy.models.dom import ObjectDocumentModel, Paragraph, Sentence
    from sumy.nlp.stemmers import Stemmer
    from sumy.utils import get_stop_words

    module, name = PEERS[method].split(".")
    summarizer = getattr(importlib.import_module(f"sumy.summarizers.{module}"), name)(Stemmer("english"))
    summarizer.stop_words = get_stop_words("english")
    sentences = [Sentence(text, _Words()) for text in objective.sentences]
    index = {id(s): i for i, s in enumerate(sentences)}
    left = [objective.budget.limit + 1e-6]

    def within_budget(ranked):  # sumy calls count(infos) on the sentences in rank order
        taken = []
        for info in ranked:
            cost = float(objective.costs[index[id(info.sentence)]])
            if cost <= left[0]:
                taken.append(info)
                left[0] -= cost
        return taken

    chosen = summarizer(ObjectDocumentModel([Paragraph(sentences)]), within_budget)
    selection = torch.zeros(len(sentences))
    selection[[index[id(s)] for s in chosen]] = 1.0
    return selection
