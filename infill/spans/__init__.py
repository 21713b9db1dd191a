"""Blanks of any length: fills whose length the sampler chooses (issue 19).

Entry point, called by the Infiller::

    trace = sample_spans(model, tokenizer, template, categories, chains, steps, generator,
                         temperature=0.5, init="left-to-right", method="rjmcmc", on_step=None,
                         max_pieces=4, move_weights=(1, 1, 1), scoring="word-l2r", window=4,
                         word_bonus=0.25)

``template`` comes from :func:`infill.text.template.parse` (its ``blanks`` and ``segments``), ``categories (K,)``
are the token ids the blanks may take (:func:`infill.text.vocabulary.word_piece_ids` for word blanks). A word
blank ``[MASK*m-n]`` holds ``m..n`` words, each a word-start piece and at most ``max_pieces - 1``
continuation pieces; a token blank exactly its tokens. The :class:`SpanTrace` holds per step and chain the
fills (``tokens``, ``lengths``; :meth:`SpanTrace.pieces` gives token ids per blank), their ``energies``,
``accepted``, ``encoder_sequences`` and ``energy_name``; :meth:`SpanTrace.top` the best distinct fills.

- ``method="rjmcmc"``: the chains start at every combination of the blanks' lengths in turn (chain ``b`` at
  the ``b``-th), with one-piece words drawn left to right from the masked LM (``init``: ``left-to-right``,
  ``independent``, ``argmax`` or ``uniform``), then take ``steps`` steps of the reversible-jump kernel
  (:mod:`.kernel`), which changes words, pieces and lengths;
- ``method="per-length"``: the simple alternative: ``chains`` chains at every combination of the blanks'
  lengths at once (``chains x combinations`` rows in the trace), each pinned to its number of words (pieces
  still change), to be chosen among by the same energy (:meth:`SpanTrace.top`).

Modules: :mod:`.fills` (variable-length fills batched over chains, :class:`SpanSpace`: the valid ones),
:mod:`.kernel` (the exact reversible-jump MH kernel, CGMH's moves, and the energy contract
:class:`SpanEnergy`: ``energy(fills) -> (B,)`` and ``proposal_logits(fills, blank, slot) -> (B, K)``),
:mod:`.mlm` (the masked LM's span energy: PLL or PLL-word-l2r, whole sentence or a window, a per-word bonus;
the default, PLL-word-l2r over the fill and 4 text tokens each side with 0.25 per word, is chosen in
``eval/spans-calibration.md``),
:mod:`.include` (words that must appear, whole words of any pieces: the include term added to the energy, and
chain starts that hold them),
:mod:`.sample` (chain starts, the two methods, the trace).
"""
from .fills import EMPTY, MASK, Fills, SpanSpace
from .include import SpanInclude, plant
from .kernel import MOVES, SpanEnergy, SpanKernel, SpanState, SpanStepInfo
from .mlm import MaskedLMSpanEnergy
from .sample import MAX_PIECES, SpanTrace, sample_spans, span_energy, span_space

__all__ = ["EMPTY", "MASK", "MAX_PIECES", "MOVES", "Fills", "MaskedLMSpanEnergy", "SpanEnergy", "SpanInclude",
           "SpanKernel", "SpanSpace", "SpanState", "SpanStepInfo", "SpanTrace", "plant", "sample_spans",
           "span_energy", "span_space"]
