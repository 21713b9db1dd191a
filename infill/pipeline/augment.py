"""Augment: many distinct variants of each sentence, a share of its words changed (:meth:`Infiller.augment
<infill.pipeline.infiller.Infiller.augment>`, ``infill.augment``).

Each sentence's words to change are chosen without the model (:mod:`infill.augmentation.words`: whitespace words,
their alphabetic cores, the protected ones left out, the choice seeded by the seed and the sentence's text); each
chosen word the model spells as one token becomes a ``[MASK]`` of the sentence's template, and every template of
the call is filled in one batched run of the pipeline (shared first passes, each template's draws from its own
generator, seeded as its choice is), each blank's draws kept off its source word
(:meth:`~infill.energies.masked_lm.MaskedLMEnergy.exclude`). The distinct draws, highest PLL first, are spliced
into the sentence as the user wrote it (:mod:`infill.augmentation.edits`, in the source word's casing); a
sentence short of ``n`` distinct variants draws again, :data:`RETRY` times as many, in one more batched run.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import torch

from ..augmentation import edits, words
from ..augmentation.variants import Variant, Variants
from ..errors import InfillError, check, positive_integer
from ..onepass.methods import ONE_PASS
from ..text.blanks import quote
from ..text.vocabulary import spelled, token_words, word_forms
from . import engine
from .config import RunConfig
from .postprocess import postprocess

METHOD = "confident-first"
"""Augment's default fill: one-pass draws through the masked LM's most-confident-first order (joint: each blank
drawn given those filled before it)."""
DRAWS = 3
"""Draws per variant asked for in the first round."""
RETRY = 8
"""A second round, for the sentences still short of ``n`` distinct variants, draws this many times as many."""


class SentenceError(InfillError):
    """A sentence refused: the message, the sentence's ``index`` in the call and the ``reason`` alone (for a
    caller that names the sentence its own way, as the command line's ``FILE:LINE:``)."""

    def __init__(self, message: str, index: int, reason: str):
        super().__init__(message)
        self.index, self.reason = index, reason


class Sentence:
    """A source sentence ready to fill: its ``words`` (with their protection), the ``chosen`` word indices, its
    ``template`` and the seed of its choice and draws."""

    def __init__(self, text: str, compiled, change, min_words, max_words, seed: int, tokenizer, categories):
        check(isinstance(text, str), f"augment takes sentences (strings), got {type(text).__name__}")
        check(text.strip() != "", "the sentence is empty: give one with words to change")
        check("[MASK" not in text.upper(), f"augment takes plain text; {quote(text)} has a [MASK] blank")
        self.text, self.seed = text, words.seed_of(seed, text)
        self.words = words.protected(text, compiled)
        open_words = [i for i, w in enumerate(self.words) if not w.why]
        ids = spelled(tokenizer, [self.words[i].core(text) for i in open_words]) if open_words else []
        changeable = [i for i, spelling in zip(open_words, ids) if len(spelling) == 1 and spelling[0] in categories]
        if not changeable:
            raise InfillError(
                f"nothing to change in {quote(text)}: every word is protected (numbers, URLs, e-mails, ids, "
                "protect) or several tokens for this model"
            )
        k = words.count(len(self.words), change, min_words, max_words)
        self.chosen = words.choose(changeable, k, self.seed)
        changes = [(self.words[i].core_start, self.words[i].core_end, "[MASK]") for i in self.chosen]
        self.template = edits.splice(text, changes)[0]

    def olds(self) -> list[str]:
        return [self.words[i].core(self.text) for i in self.chosen]

    def variant(self, fills: Sequence[str], score: float) -> Optional[Variant]:
        """The variant of ``fills`` (one per chosen word) spliced into the sentence in each word's casing; None
        where a fill is empty, holds a mask or whitespace, or is its word again."""
        changes = []
        for i, old, fill in zip(self.chosen, self.olds(), fills):
            new = edits.cased(fill.strip(), old)
            if not new or "[" in new or any(c.isspace() for c in new) or new.casefold() == old.casefold():
                return None
            changes.append((self.words[i].core_start, self.words[i].core_end, new))
        text, changed = edits.splice(self.text, changes)
        return Variant(text, changed, score, len(changed) / len(self.words))


def check_request(n, change, seed, min_words, max_words, sampler) -> None:
    """Refuse bad arguments in one line (before a model loads)."""
    positive_integer("n", n)
    words.check_share(change, min_words, max_words)
    check(isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0, f"seed must be >= 0, got {seed!r}")
    method = ONE_PASS.get(sampler) if isinstance(sampler, str) else None
    draws = [name for name, m in ONE_PASS.items() if m.kind == "one-pass"]
    check(
        method is not None and method.kind == "one-pass",
        f"augment fills with one-pass draws: sampler must be one of {', '.join(draws)}, got {sampler!r}",
    )


def _config(sampler: str, draws: int, seed: int) -> RunConfig:
    return RunConfig.create(sampler=sampler, num_samples=draws, top=draws, seed=seed % 2**63)


def augment(
    infiller,
    texts: Union[str, Sequence[str]],
    n: int = 5,
    change: float = 0.15,
    seed: int = 0,
    protect: Sequence[str] = (),
    min_words: int = 1,
    max_words: Optional[int] = None,
    sampler: str = METHOD,
) -> Union[Variants, list[Variants]]:
    """:meth:`Infiller.augment <infill.pipeline.infiller.Infiller.augment>`."""
    check_request(n, change, seed, min_words, max_words, sampler)
    one = isinstance(texts, str)
    check(one or isinstance(texts, (list, tuple)), f"augment takes a string or a list of strings, got {texts!r}")
    compiled = words.patterns(protect)
    categories = set(infiller.category_ids().tolist())
    sentences = []
    for k, text in enumerate([texts] if one else texts):
        try:
            sentences.append(
                Sentence(text, compiled, change, min_words, max_words, seed, infiller.tokenizer, categories)
            )
        except InfillError as exc:
            raise SentenceError(str(exc) if one else f"sentence {k + 1}: {exc}", k, str(exc)) from None
    found: list[dict] = [{} for _ in sentences]
    spent = [0] * len(sentences)
    for round_, draws in enumerate((n * DRAWS, n * DRAWS * RETRY)):
        short = [i for i, f in enumerate(found) if len(f) < n]
        if not short:
            break
        config = _config(sampler, draws, seed)
        for i, result in zip(short, _fill(infiller, [sentences[i] for i in short], config, round_)):
            spent[i] += result.diagnostics.encoder_sequences
            for sample in result.samples:
                variant = sentences[i].variant(sample.fills, sample.energy)
                if variant is not None:  # every word changed (Sentence.variant), so never the source
                    found[i].setdefault(variant.text, variant)
    out = [_kept(s.text, f, n, c) for s, f, c in zip(sentences, found, spent)]
    return out[0] if one else out


def _kept(source: str, found: dict, n: int, spent: int) -> Variants:
    best = sorted(found.values(), key=lambda v: (-v.score, v.text))[:n]
    return Variants(best, source, n - len(best), spent)


def _fill(infiller, sentences: list[Sentence], config: RunConfig, round_: int):
    """Every sentence's template filled, in order: one prepared batch (shared first passes), each template's draws
    from its own generator (seeded by its sentence and the round), kept off its source words."""
    prepared = infiller.prepare([s.template for s in sentences], config)
    texts, forms = token_words(infiller.tokenizer)[0], {}
    for window in engine.first_passes(infiller, prepared):
        for index, first in window:
            sentence = sentences[index]
            for old in sentence.olds():
                if old.casefold() not in forms:
                    forms[old.casefold()] = _forms(infiller, prepared.categories, texts, old)
            excluded = torch.stack([forms[old.casefold()] for old in sentence.olds()])
            generator = torch.Generator(infiller.device).manual_seed((sentence.seed + round_) % 2**63)
            batch = engine.run_batch(infiller, prepared, index, generator, first=first, excluded=excluded)
            yield postprocess(batch, infiller.tokenizer, infiller.model_name, config.seed)


def _forms(infiller, categories: torch.Tensor, texts: dict, word: str) -> torch.Tensor:
    """Which ``categories`` are a form of ``word`` (its token, any casing), bool ``(K,)``."""
    forms = torch.tensor(sorted(word_forms(infiller.tokenizer, word, texts)), dtype=torch.long)
    return torch.isin(categories, forms)
