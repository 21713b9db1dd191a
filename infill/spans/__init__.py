"""Blanks of any length: fills whose length the sampler chooses.

The span sampler is a sampler of the one contract (:class:`~infill.samplers.Sampler`), run by the samplers'
driver (:func:`~infill.samplers.sample`, :func:`~infill.samplers.run_annealed`: budget, annealing and
progress as for token blanks) into the one :class:`~infill.samplers.Trace`. Entry points::

    run = span_run(model, tokenizer, template, categories, chains, generator, temperature=0.5,
                   init="left-to-right", method="rjmcmc", max_pieces=4, move_weights=(1, 1, 1), include=(),
                   meter=None, scoring="word-l2r", window=4, word_bonus=0.25)
    trace = run_annealed(run.sampler, run.target, run.x0, [(0.5, 12)], generator)
    run, trace = sample_spans(model, tokenizer, template, categories, chains, steps, generator, temperature=0.5)

``template`` comes from :func:`infill.text.template.parse` (its ``blanks`` and ``segments``), ``categories (K,)``
are the token ids the blanks may take (:func:`infill.text.vocabulary.word_piece_ids` for word blanks). A word
blank ``[MASK*m-n]`` holds ``m..n`` words, each a word-start piece and at most ``max_pieces - 1``
continuation pieces; a token blank exactly its tokens. A state ``x`` is each chain's fills packed in one
integer row (:meth:`Fills.pack`: tokens, then lengths); :meth:`SpanSampler.fills` unpacks them and
:meth:`Fills.pieces` gives the token ids per blank. :meth:`Trace.candidates` gives the states a ``top`` may
choose from with their energies at temperature 1, :func:`best` the distinct best of them.

- ``method="rjmcmc"``: the chains start at every combination of the blanks' lengths in turn (chain ``b`` at
  the ``b``-th), with one-piece words drawn left to right from the masked LM (``init``: ``left-to-right``,
  ``independent``, ``argmax`` or ``uniform``), then take the reversible-jump kernel's steps (:mod:`.kernel`),
  which change words, pieces and lengths;
- ``method="per-length"``: the simple alternative: ``chains`` chains at every combination of the blanks'
  lengths at once (``chains x combinations`` chains), each pinned to its number of words (pieces still
  change), to be chosen among by the same energy (:func:`best`).

A temperature divides the energy and the proposal's logits alike (:class:`~infill.energies.tempered.Tempered`).
Every encoder pass is charged to the energy's :class:`~infill.energies.budget.Meter` before it runs, so a
limit stops the run at the state before a step it cannot pay.

Modules: :mod:`.fills` (variable-length fills batched over chains, packed as states; :class:`SpanSpace`: the
valid ones), :mod:`.kernel` (:class:`SpanSampler`, the exact reversible-jump MH kernel, CGMH's moves, and the
energy contract :class:`SpanEnergy`: ``energy(fills) -> (B,)`` and ``proposal_logits(fills, blank, slot) ->
(B, K)``), :mod:`.mlm` (the masked LM's span energy: PLL or PLL-word-l2r, whole sentence or a window, a
per-word bonus; the default is chosen in ``eval/spans-calibration/``), :mod:`.include` (words that must
appear, whole words of any pieces: the include term added to the energy, and chain starts that hold them),
:mod:`.sample` (chain starts, the two methods, :class:`SpanRun`, :func:`best`).
"""

from .fills import EMPTY, MASK, Fills, SpanSpace
from .include import SpanInclude, plant
from .kernel import MOVES, SpanEnergy, SpanSampler
from .mlm import MaskedLMSpanEnergy
from .sample import MAX_PIECES, SpanRun, best, sample_spans, span_energy, span_run, span_space

__all__ = [
    "EMPTY",
    "MASK",
    "MAX_PIECES",
    "MOVES",
    "Fills",
    "MaskedLMSpanEnergy",
    "SpanEnergy",
    "SpanInclude",
    "SpanRun",
    "SpanSampler",
    "SpanSpace",
    "best",
    "plant",
    "sample_spans",
    "span_energy",
    "span_run",
    "span_space",
]
