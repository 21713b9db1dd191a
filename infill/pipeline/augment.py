"""Augment: many distinct variants of each sentence, a share of its words changed (:meth:`Infiller.augment
<infill.pipeline.infiller.Infiller.augment>`, ``infill.augment``).

Each variant of a sentence changes its own words, chosen without the model (:mod:`infill.augmentation.words`:
whitespace words, their alphabetic cores, the protected ones left out, each variant's choice seeded by the seed
and the sentence's text, the words earlier variants used least first); each chosen word the model spells as one
token becomes a ``[MASK]`` of that choice's template, and every template of the call is filled in one batched run
(shared first passes, each template's draws from its own generator, seeded by its sentence and words), each
blank's draws kept off its source word (:meth:`~infill.energies.masked_lm.MaskedLMEnergy.exclude`). A template's
distinct draws, most likely under the order first (their log-probability along it, which costs nothing more),
are spliced into the sentence as the user wrote it (:mod:`infill.augmentation.edits`, in the source word's
casing) and only those kept are scored by their PLL (``pll=False``: not scored; the score is that
log-probability); a template short of its variants draws again, :data:`RETRY` times as many, in one more
batched run.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence, Union

import torch

from ..augmentation import edits, words
from ..augmentation.variants import Variant, Variants
from ..energies.conditionals import ConditionalCache
from ..energies.masked_lm import MaskedLMEnergy
from ..errors import InfillError, check
from ..lm import mlm_draws
from ..lm.mlm_draws import ORDERS, Order
from ..text.template import fill_text, parse
from ..text.vocabulary import spelled, token_words, word_forms
from . import engine
from .augment_request import METHOD, Request, check_request
from .config import RunConfig

DRAWS = 3
"""Draws per variant asked for in the first round by an order that fills the blanks in turn (each draw costs
passes)."""
FREE_DRAWS = 16
"""Draws per variant asked for in the first round by an order that draws every blank from the first pass (draws
cost no pass)."""
RETRY = 8
"""A second round, for the sentences still short of ``n`` distinct variants, draws this many times as many."""


class SentenceError(InfillError):
    """A sentence refused: the message, the sentence's ``index`` in the call and the ``reason`` alone (for a
    caller that names the sentence its own way, as the command line's ``FILE:LINE:``)."""

    def __init__(self, message: str, index: int, reason: str):
        super().__init__(message)
        self.index, self.reason = index, reason


class Sentence:
    """A source sentence ready to fill: its ``words`` (with their protection), the seed of its choices and draws,
    and ``choices``, each variant's chosen word indices (:func:`~infill.augmentation.words.choose`)."""

    def __init__(self, text: str, request: Request, tokenizer, categories: set):
        self.words = words.checked(text, request.compiled)
        self.text, self.seed = text, words.seed_of(request.seed, text)
        open_words = [i for i, w in enumerate(self.words) if not w.why]
        ids = spelled(tokenizer, [self.words[i].core(text) for i in open_words])
        changeable = [i for i, spelling in zip(open_words, ids) if len(spelling) == 1 and spelling[0] in categories]
        check(bool(changeable), words.nothing_to_change(text))
        k = words.count(len(self.words), request.change, request.min_words, request.max_words)
        self.choices = words.choose(changeable, k, self.seed, request.n)

    def template(self, chosen: tuple[int, ...]) -> str:
        """The sentence with each ``chosen`` word a ``[MASK]``."""
        return edits.splice(self.text, [(self.words[i].core_start, self.words[i].core_end, "[MASK]") for i in chosen])[
            0
        ]

    def olds(self, chosen: tuple[int, ...]) -> list[str]:
        return [self.words[i].core(self.text) for i in chosen]

    def variant(self, chosen: tuple[int, ...], fills: Sequence[str], score: float) -> Optional[Variant]:
        """The variant of ``fills`` (one per ``chosen`` word) spliced into the sentence in each word's casing; None
        where a fill is empty, holds a mask or whitespace, or is its word again."""
        changes = []
        for i, old, fill in zip(chosen, self.olds(chosen), fills):
            new = edits.cased(fill.strip(), old)
            if not new or "[" in new or any(c.isspace() for c in new) or new.casefold() == old.casefold():
                return None
            changes.append((self.words[i].core_start, self.words[i].core_end, new))
        text, changed = edits.splice(self.text, changes)
        return Variant(text, changed, score, len(changed) / len(self.words))


def ready(texts: Sequence[str], request: Request, tokenizer, max_length: int, categories: set) -> list[Sentence]:
    """Each of ``texts`` ready to fill, each of its templates parsed for the model (``categories``: the token ids a
    blank may take): every check of a sentence, with the tokenizer alone. A sentence refused raises
    :class:`SentenceError` (``sentence K: reason``)."""
    out = []
    for k, text in enumerate(texts):
        try:
            sentence = Sentence(text, request, tokenizer, categories)
            for chosen in dict.fromkeys(sentence.choices):
                parse(sentence.template(chosen), tokenizer, max_length)
        except InfillError as exc:
            raise SentenceError(f"sentence {k + 1}: {exc}", k, str(exc)) from None
        out.append(sentence)
    return out


def _config(sampler: str, seed: int) -> RunConfig:
    return RunConfig.create(sampler=sampler, num_samples=1, seed=seed % 2**63)


@dataclass
class Job:
    """One template of a sentence: its ``chosen`` words, the ``wanted`` variants that chose them and the variants
    ``found`` so far, by text."""

    sentence: int
    chosen: tuple[int, ...]
    wanted: int
    found: dict = field(default_factory=dict)


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
    pll: bool = True,
) -> Union[Variants, list[Variants]]:
    """:meth:`Infiller.augment <infill.pipeline.infiller.Infiller.augment>`."""
    check_request(n, change, seed, min_words, max_words, sampler)
    one = isinstance(texts, str)
    check(one or isinstance(texts, (list, tuple)), f"augment takes a string or a list of strings, got {texts!r}")
    request = Request(n, change, seed, words.patterns(protect), min_words, max_words)
    categories = set(infiller.category_ids().tolist())
    try:
        sentences = ready([texts] if one else texts, request, infiller.tokenizer, infiller.max_length, categories)
    except SentenceError as exc:
        raise (SentenceError(exc.reason, 0, exc.reason) if one else exc) from None
    jobs = [Job(k, chosen, c) for k, s in enumerate(sentences) for chosen, c in Counter(s.choices).items()]
    spent = [0] * len(sentences)
    filler = Filler(infiller, ORDERS[sampler], pll)
    first = FREE_DRAWS if ORDERS[sampler].blanks is None else DRAWS
    for round_, draws in enumerate((first, first * RETRY)):
        short = [job for job in jobs if len(job.found) < job.wanted]
        for job, energy in zip(short, filler.energies([sentences[j.sentence] for j in short], short, seed)):
            spent[job.sentence] += filler(job, sentences[job.sentence], energy, draws, round_)
    out = [Variants([], s.text, n, spent[k]) for k, s in enumerate(sentences)]
    for job in jobs:
        out[job.sentence] += job.found.values()
    for variants in out:
        variants.sort(key=lambda v: (-v.score, v.text))
        variants.shortfall = n - len(variants)
    return out[0] if one else out


class Filler:
    """Fills augment's templates with ``order``'s draws on ``infiller``: every template's energy with its first pass
    shared (:meth:`energies`), then each template's draws, the distinct ones most likely under the order kept
    and scored by their PLL (:meth:`__call__`)."""

    def __init__(self, infiller, order: Order, pll: bool):
        self.infiller, self.order, self.pll = infiller, order, pll
        self.texts: dict[int, str] = {}  # a category's fill text
        self.forms: dict[str, torch.Tensor] = {}  # the categories that are a form of a word (casefolded)

    def energies(self, sentences: list[Sentence], jobs: list[Job], seed: int) -> Iterator[MaskedLMEnergy]:
        """Each job's PLL energy, in order, its first pass from passes shared by every job, its draws kept off its
        source words."""
        infiller = self.infiller
        templates = [s.template(job.chosen) for s, job in zip(sentences, jobs)]
        prepared = infiller.prepare(templates, _config("independent", seed))
        for window in engine.first_passes(infiller, prepared):
            for index, first in window:
                template, olds = prepared.templates[index], sentences[index].olds(jobs[index].chosen)
                energy = MaskedLMEnergy(
                    infiller.model,
                    template.input_ids,
                    template.blank_positions,
                    prepared.categories,
                    infiller.tokenizer.mask_token_id,
                    infiller.chunk_size,
                    ConditionalCache(infiller.cache_mib << 20),
                    first=first,
                )
                energy.exclude(torch.stack([self._forms(prepared.categories, old) for old in olds]))
                yield energy

    def __call__(self, job: Job, sentence: Sentence, energy: MaskedLMEnergy, draws: int, round_: int) -> int:
        """Draw ``draws`` a variant ``job`` still lacks (from a generator seeded by its sentence, its words and
        ``round_``), keep the distinct ones most likely under the order until it has its variants, score them by
        their PLL; the encoder sequences spent."""
        key = words.seed_of(sentence.seed, f"{round_} {job.chosen}")
        generator = torch.Generator(self.infiller.device).manual_seed(key)
        x, log_q = self._draws(energy, draws * (job.wanted - len(job.found)), generator)
        kept, rows = [], []
        for r in sorted(range(len(x)), key=lambda r: (-log_q[r], x[r])):
            if len(job.found) == job.wanted:
                break
            variant = sentence.variant(job.chosen, [self._text(energy, c) for c in x[r]], log_q[r])
            if variant is not None and variant.text not in job.found:
                job.found[variant.text] = variant
                kept.append(variant)
                rows.append(x[r])
        if self.pll and rows:
            for variant, score in zip(kept, energy.of_indices(torch.tensor(rows)).tolist()):
                job.found[variant.text] = dataclasses.replace(variant, score=score)
        return energy.sequences

    def _draws(self, energy: MaskedLMEnergy, m: int, generator: torch.Generator) -> tuple[list, list]:
        """``m`` draws of the order, as category index lists, with their log-probabilities under it."""
        first, order = energy.first_pass(), self.order
        if order.blanks is None:
            x = first.argmax(-1)[None]
            if order.sampled:
                x = mlm_draws.sample_categorical(first.expand(m, -1, -1), generator)
            log_q = torch.log_softmax(first, -1).gather(-1, x.T).sum(0)
            return x.tolist(), log_q.tolist()
        d = first.shape[0]
        blanks = order.blanks(m, d, generator, first.device)
        start = mlm_draws.first_step_logits(first, blanks, order.confident)
        empty = torch.zeros(m, d, dtype=torch.long, device=first.device)
        x, log_q, _ = mlm_draws.fill(energy.blank_logits, empty, blanks, order.confident, generator, first=start)
        return x.tolist(), log_q.tolist()

    def _text(self, energy: MaskedLMEnergy, category: int) -> str:
        if category not in self.texts:
            self.texts[category] = fill_text(self.infiller.tokenizer, [energy.category_ids[category].item()])
        return self.texts[category]

    def _forms(self, categories: torch.Tensor, word: str) -> torch.Tensor:
        """Which ``categories`` are a form of ``word`` (its token, any casing), bool ``(K,)``."""
        if word.casefold() not in self.forms:
            found = word_forms(self.infiller.tokenizer, word, token_words(self.infiller.tokenizer)[0])
            self.forms[word.casefold()] = torch.isin(categories, torch.tensor(sorted(found), dtype=torch.long))
        return self.forms[word.casefold()]
