"""Extractive summarization by MCMC on the Lin & Bilmes (2011) objective.

- :mod:`.sentences`: raw text -> sentences (pysbd), bytes validation, word counts
- :mod:`.objective`: ``F(S) = L(S) + lambda R(S)``, the budget and the energy all samplers share
- :mod:`.baselines`: LEAD, budgeted greedy, brute force (tiny documents)
- :mod:`.decoding`: run chains, sample-/dimension-wise majority votes, best state seen
- :mod:`.chain_stats`: effective sample size
- :mod:`.aclsum_data`: the ACLSum data set (introduction + conclusion -> abstract)
"""
from .baselines import brute_force, greedy, lead
from .decoding import DECODINGS, ChainResult, ChainSettings, run_chains, selected_sentences
from .objective import Budget, ObjectiveConfig, SummaryObjective
from .sentences import decode_text, split_sentences, word_count

__all__ = ["Budget", "ChainResult", "ChainSettings", "DECODINGS", "ObjectiveConfig", "SummaryObjective", "brute_force",
           "decode_text", "greedy", "lead", "run_chains", "selected_sentences", "split_sentences", "word_count"]
