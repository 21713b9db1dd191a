"""Stage 1 of a run: templates parsed and checked against one configuration, each template's plan resolved
(:func:`~infill.pipeline.policy.resolve`): every check that needs the tokenizer and no model, so the CLI runs it
before it loads the model."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Sequence

from torch import Tensor

from ..constraints import Include, include_pieces, include_term
from ..errors import InfillError
from ..spans import MAX_PIECES
from ..text.blanks import quote
from ..text.template import Template, parse
from ..text.vocabulary import sampleable_token_ids, word_piece_ids
from .config import RunConfig
from .policy import Plan, resolve


@dataclass(frozen=True)
class Prepared:
    """Templates checked against one configuration: the stage before any model work. ``plans`` are what each
    template runs (:func:`~infill.pipeline.policy.resolve`: ``auto`` resolved, the sampler built, the budget
    split), resolved for an energy with terms where ``constrained`` and for chains in a lower precision where
    ``lower_precision``; ``categories`` are the tokens token blanks may take, ``pieces``
    those word blanks may take (None without word blanks); ``include`` is the include term of ``config.include``
    for templates of token blanks, ``span_include`` the words' forms as pieces for templates with word blanks
    (None without words)."""

    templates: tuple[Template, ...]
    config: RunConfig
    categories: Tensor
    plans: tuple[Plan, ...]
    constrained: bool = False
    lower_precision: bool = False
    include: Optional[Include] = None
    pieces: Optional[Tensor] = None
    span_include: Optional[list] = None

    def resolved(self, constrained: bool, lower_precision: bool) -> "Prepared":
        """These templates resolved for an energy with terms (a user's, or rewrite's closeness) where
        ``constrained`` (or already), and for chains in a lower precision where ``lower_precision``."""
        constrained = constrained or self.constrained
        if (constrained, lower_precision) == (self.constrained, self.lower_precision):
            return self
        plans = _resolve(self.templates, self.config, constrained, lower_precision)
        return dataclasses.replace(self, plans=plans, constrained=constrained, lower_precision=lower_precision)


def prepare(
    texts: Sequence[str],
    config: RunConfig,
    tokenizer,
    max_length: int,
    constrained: bool = False,
    lower_precision: bool = False,
) -> Prepared:
    """Parse ``texts``, build the categories and resolve each template's plan (``constrained``: an energy with
    terms beside the PLL and the include words; ``lower_precision``: chains below float32): every check that
    needs no model. Raises :class:`InfillError`
    with one line."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        raise InfillError(f"templates must be a list of strings, got {type(texts).__name__}")
    templates = []
    for text in texts:
        if not isinstance(text, str):
            raise InfillError(f"a template must be a string, got {type(text).__name__}")
        templates.append(parse(text, tokenizer, max_length, config.blank_unit))
    categories = sampleable_token_ids(tokenizer, config.allow_subwords, config.forbid, config.allow_punctuation)
    if config.include and config.is_baseline:
        raise InfillError(
            f"{config.method} draws from the masked LM alone and cannot hold include words: use auto or an MCMC sampler"
        )
    constrained = constrained or bool(config.include)
    plans = _resolve(templates, config, constrained, lower_precision)
    pieces, spans, fixed = None, None, [t for t in templates if t.fixed]
    if len(fixed) < len(templates):
        words = [t for t in templates if not t.fixed]
        pieces = word_piece_ids(tokenizer, config.forbid, config.allow_punctuation)
        if config.include:
            spans = include_pieces(
                tokenizer,
                pieces,
                config.include,
                min(sum(b.max for b in t.blanks) for t in words),
                MAX_PIECES,
                config.forbid,
            )
    include = None
    if config.include and fixed:
        include = include_term(tokenizer, categories, config.include, min(t.num_blanks for t in fixed), config.forbid)
    return Prepared(tuple(templates), config, categories, plans, constrained, lower_precision, include, pieces, spans)


def _resolve(
    templates: Sequence[Template], config: RunConfig, constrained: bool, lower_precision: bool
) -> tuple[Plan, ...]:
    """Each template's plan (:func:`~infill.pipeline.policy.resolve`), a refusal naming its template."""
    plans = []
    for template in templates:
        try:
            plans.append(resolve(config, template, constrained, lower_precision))
        except InfillError as exc:
            raise InfillError(f"{exc} (template {quote(template.text)})") from None
    return tuple(plans)
