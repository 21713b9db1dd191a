"""Augment: many distinct variants of each sentence, a share of its words changed (:meth:`Infiller.augment
<infill.pipeline.infiller.Infiller.augment>`, ``infill.augment``).

Each variant of a sentence changes its own words, chosen without the model (:mod:`infill.augmentation.words`:
whitespace words, their alphabetic cores, the protected ones left out, each variant's choice seeded by the seed
and the sentence's text, the words earlier variants used least first); each chosen word the model spells as one
token becomes a ``[MASK]`` of that choice's template, and every template of the call is filled in one batched run
(shared first passes, each template's draws from its own generator, seeded by its sentence and words; free
draws by inverting each blank's distribution function, one uniform a draw and blank where the Gumbel-max draw
takes one a category), each blank's draws kept off its source word, the words beside it, numbers and lone letters
(:meth:`~infill.energies.masked_lm.MaskedLMEnergy.exclude`). A template's
distinct draws, most likely under the order first (their log-probability along it, which costs nothing more),
less :data:`VARIETY` for each new word an earlier variant of the sentence put at the same place, a draw with an
article that does not fit dropped (:mod:`infill.augmentation.articles`), are spliced into the sentence as the user
wrote it (:mod:`infill.augmentation.edits`, in the source word's
casing) and only those kept are scored by their PLL, their masked copies run in passes shared by the call's
templates (:class:`Scores`; ``pll=False``: not scored, the score is that log-probability); a template short of
its variants draws again, :data:`RETRY` times as many, in one more batched run.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterator, Optional, Sequence, Union

import numpy as np
import torch

from ..augmentation import actions, articles, edits, words
from ..augmentation.terms import Classifier, Label, check_terms, closeness
from ..augmentation.variants import Variant, Variants
from ..energies.conditionals import MASKED, ConditionalCache
from ..energies.masked_lm import MaskedLMEnergy
from ..errors import InfillError, check
from ..lm import mlm_draws, packed
from ..lm.classifier import hub_classifier
from ..lm.mlm_draws import ORDERS, Order
from ..lm.models import category_head
from ..text.template import fill_text, parse
from ..text.vocabulary import spelled, token_forms, token_words
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
VARIETY = 3.0
"""What a draw's rank loses (nats) for each new word that an earlier variant of its sentence put at the same
place: the variants' words differ where their choices overlap."""


class SentenceError(InfillError):
    """A sentence refused: the message, the sentence's ``index`` in the call and the ``reason`` alone (for a
    caller that names the sentence its own way, as the command line's ``FILE:LINE:``)."""

    def __init__(self, message: str, index: int, reason: str):
        super().__init__(message)
        self.index, self.reason = index, reason


class Sentence:
    """A source sentence ready to fill: its ``words`` (with their protection), the ``sites`` its ``action`` may
    edit (:mod:`infill.augmentation.actions`), the seed of its choices and draws, and ``choices``, each variant's
    chosen word indices (:func:`~infill.augmentation.words.choose`)."""

    def __init__(self, text: str, request: Request, tokenizer, categories: set):
        self.words = words.checked(text, request.compiled)
        self.text, self.seed = text, words.seed_of(request.seed, text)
        open_words = [i for i, w in enumerate(self.words) if not w.why]
        ids = spelled(tokenizer, [self.words[i].core(text) for i in open_words])
        self.tokens = {i: s[0] for i, s in zip(open_words, ids) if len(s) == 1 and s[0] in categories}
        self.action, self.sites = request.action, actions.sites(text, self.words, request.action, self.tokens)
        check(bool(self.sites), words.nothing_to_change(text, request.action))
        k = words.count(len(self.words), request.change, request.min_words, request.max_words)
        self.choices = words.choose(list(self.sites), k, self.seed, request.n)

    def template(self, chosen: tuple[int, ...]) -> str:
        """The sentence with a ``[MASK]`` at each ``chosen`` site."""
        return edits.splice(self.text, [self._change(i, "[MASK]") for i in chosen])[0]

    def variant(self, chosen: tuple[int, ...], fills: Sequence[str], score: float) -> Optional[Variant]:
        """The variant of ``fills`` (one per ``chosen`` site; ignored where a site has no blank) spliced into the
        sentence, a substitute in its word's casing; None where a fill is empty, holds a mask or whitespace, or is
        its word again, or where an article beside a change does not fit the word after it
        (:mod:`~infill.augmentation.articles`)."""
        changes = []
        for i, fill in zip(chosen, fills):
            old = self.sites[i].old
            new = edits.cased(fill.strip(), old) if self.sites[i].blank else ""
            if self.sites[i].blank and (
                not new or "[" in new or any(c.isspace() for c in new) or new.casefold() == old.casefold()
            ):
                return None
            changes.append(self._change(i, new))
        text, changed = edits.splice(self.text, changes)
        if not articles.agree(text, [e.variant_span for e in changed]):
            return None
        return Variant(text, changed, score, len(changed) / len(self.words))

    def _change(self, i: int, new: str) -> tuple[int, int, str]:
        site = self.sites[i]
        return site.start, site.end, site.form.format(new)


def ready(texts: Sequence[str], request: Request, tokenizer, max_length: int, categories: set) -> list[Sentence]:
    """Each of ``texts`` ready to fill, each of its templates parsed for the model (``categories``: the token ids a
    blank may take): every check of a sentence, with the tokenizer alone. A sentence refused raises
    :class:`SentenceError` (``sentence K: reason``)."""
    out = []
    for k, text in enumerate(texts):
        try:
            sentence = Sentence(text, request, tokenizer, categories)
            for chosen in dict.fromkeys(sentence.choices):
                if any(sentence.sites[i].blank for i in chosen):  # a template to fill (a delete has none)
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
    keep_close: float = 0.0,
    classifier: Union[Classifier, str, None] = None,
    label: Union[int, str, None] = None,
    action: str = "substitute",
) -> Union[Variants, list[Variants]]:
    """``n`` distinct variants of each sentence of ``texts``, ``change`` of its words (at least ``min_words``, at
    most ``max_words``) changed (:meth:`Infiller.augment <infill.pipeline.infiller.Infiller.augment>`): a string
    gives its :class:`~infill.augmentation.variants.Variants` (its ``shortfall``: how many fewer than ``n``
    exist), a list one per sentence, in order. Numbers, URLs, e-mails, ids, the ``protect`` words and patterns and
    every character outside the changed words stay as written; a sentence gets the same variants for a ``seed`` in
    any batch. Every sentence is filled in one batched run of ``sampler``'s draws, the kept ones scored by their
    PLL unless ``pll`` is False (module docstring). ``keep_close`` weighs each new word's closeness to its old one
    in the ranking of the draws; a ``classifier`` (a callable of texts to label probabilities, or a sequence
    classifier's hub id or path) keeps ``label`` (default: each source's own), its log-probability added to the
    ranking (:mod:`infill.augmentation.terms`). ``action`` ``insert`` puts the new words before chosen words and
    ``delete`` removes them (:mod:`infill.augmentation.actions`)."""
    check_request(n, change, seed, min_words, max_words, sampler, action, pll)
    check_terms(keep_close, classifier, label, action)
    one = isinstance(texts, str)
    check(one or isinstance(texts, (list, tuple)), f"augment takes a string or a list of strings, got {texts!r}")
    request = Request(n, change, seed, words.patterns(protect), min_words, max_words, action)
    categories = set(infiller.category_ids().tolist())
    try:
        sentences = ready([texts] if one else texts, request, infiller.tokenizer, infiller.max_length, categories)
    except SentenceError as exc:
        raise (SentenceError(exc.reason, 0, exc.reason) if one else exc) from None
    jobs = [Job(k, chosen, c) for k, s in enumerate(sentences) for chosen, c in Counter(s.choices).items()]
    if isinstance(classifier, str):
        classifier = hub_classifier(classifier, str(infiller.device))
    keeping = None if classifier is None else Label(classifier, label)
    terms = Terms(keep_close, keeping, keeping.targets([s.text for s in sentences]) if keeping else None)
    if action == "delete":
        spent = _deleted(sentences, jobs, terms)
    else:
        spent = _filled(Filler(infiller, ORDERS[sampler], pll, terms), sentences, jobs, seed)
    out = [Variants([], s.text, n, spent[k]) for k, s in enumerate(sentences)]
    for job in jobs:
        out[job.sentence] += job.found.values()
    for variants in out:
        variants.sort(key=lambda v: (-v.score, v.text))
        variants.shortfall = n - len(variants)
    return out[0] if one else out


def _filled(filler: "Filler", sentences: list[Sentence], jobs: list[Job], seed: int) -> list[int]:
    """Every job's variants drawn by ``filler``, in a first round and for the jobs still short a second; the
    encoder sequences each sentence spent."""
    spent = [0] * len(sentences)
    first = FREE_DRAWS if filler.order.blanks is None else DRAWS
    for round_, draws in enumerate((first, first * RETRY)):
        short = [job for job in jobs if len(job.found) < job.wanted]
        for job, energy in zip(short, filler.energies([sentences[j.sentence] for j in short], short, seed)):
            spent[job.sentence] += filler(job, sentences[job.sentence], energy, draws, round_)
        filler.score()
    return spent


def _deleted(sentences: list[Sentence], jobs: list[Job], terms: "Terms") -> list[int]:
    """Every job's one variant, its words deleted (score 0: the PLL of no filled blank; no encoder pass), with
    the label's probability where a classifier is given; none where an article would not fit (``a big apple``)."""
    seen = set()
    for job in jobs:
        variant = sentences[job.sentence].variant(job.chosen, [""] * len(job.chosen), 0.0)
        if variant is None or (job.sentence, variant.text) in seen:
            continue  # job.found stays empty
        job.found = {variant.text: variant}
        seen.add((job.sentence, variant.text))
    found = [(job, v) for job in jobs for v in job.found.values()]  # a job whose text another gave has none
    if terms.label is not None and found:
        p = terms.label.probabilities([v.text for _, v in found]).tolist()
        for (job, v), row in zip(found, p):
            job.found[v.text] = dataclasses.replace(v, label_probability=row[terms.targets[job.sentence]])
    return [0] * len(sentences)


@dataclass(frozen=True)
class Terms:
    """What a candidate's rank adds to its draw's log-probability (:mod:`infill.augmentation.terms`):
    ``keep_close`` times its summed closeness, and the log-probability of ``targets[sentence]`` under ``label``'s
    classifier where given."""

    keep_close: float = 0.0
    label: Optional[Label] = None
    targets: Optional[list[int]] = None


class Filler:
    """Fills augment's templates with ``order``'s draws on ``infiller``: every template's energy with its first pass
    shared (:meth:`energies`), then each template's draws, the distinct ones ranked by their log-probability under
    the order and the :class:`Terms`, the best kept and scored by their PLL (:meth:`__call__`)."""

    def __init__(self, infiller, order: Order, pll: bool, terms: Terms = Terms()):
        self.infiller, self.order, self.terms = infiller, order, terms
        self.scores = Scores() if pll else None
        self.embeddings = infiller.model.get_input_embeddings().weight.detach()
        self.texts: dict[int, str] = {}  # a category's fill text
        self.forms: dict[str, torch.Tensor] = {}  # the categories that are a form of a word (casefolded)
        self.never: Optional[dict[bool, torch.Tensor]] = None  # the categories no blank takes, by Site.letters
        self.used: dict[int, set] = {}  # a sentence's new words so far, (source span, casefolded word) pairs

    def energies(self, sentences: list[Sentence], jobs: list[Job], seed: int) -> Iterator[MaskedLMEnergy]:
        """Each job's PLL energy, in order, its first pass from passes shared by every job, its draws kept off its
        source words."""
        infiller = self.infiller
        templates = [s.template(job.chosen) for s, job in zip(sentences, jobs)]
        prepared = infiller.prepare(templates, _config("independent", seed))
        for window in engine.first_passes(infiller, prepared):
            for index, first in window:
                template, sites = prepared.templates[index], [sentences[index].sites[i] for i in jobs[index].chosen]
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
                energy.exclude(torch.stack([self._avoided(prepared.categories, site) for site in sites]))
                yield energy

    def __call__(self, job: Job, sentence: Sentence, energy: MaskedLMEnergy, draws: int, round_: int) -> int:
        """Draw ``draws`` a variant ``job`` still lacks (from a generator seeded by its sentence, its words and
        ``round_``), keep the best distinct ones (:meth:`_ranked`) until it has its variants, score them by their
        PLL; the encoder sequences spent."""
        key = words.seed_of(sentence.seed, f"{round_} {job.chosen}")
        generator = torch.Generator(self.infiller.device).manual_seed(key)
        x, log_q = self._draws(energy, draws * (job.wanted - len(job.found)), generator)
        best = self._ranked(job, sentence, energy, x, log_q, job.wanted - len(job.found))
        kept, rows = [variant for variant, _ in best], [row for _, row in best]
        job.found |= {variant.text: variant for variant in kept}
        if self.scores is None or not rows:
            return energy.sequences
        return energy.sequences + self.scores.add(job, kept, energy, torch.tensor(rows))

    def score(self) -> None:
        """Score the variants kept since the last call by their PLL (:class:`Scores`)."""
        if self.scores is not None:
            self.scores.run(engine.pass_rows(self.infiller))

    def _ranked(self, job: Job, sentence: Sentence, energy: MaskedLMEnergy, x: list, log_q: list, need: int) -> list:
        """The ``need`` best distinct new variants of the draws ``x`` with their rows, one at a time: by
        log-probability under the order (the first draw of a text its likeliest), plus :class:`Terms`', less
        :data:`VARIETY` for each new word an earlier variant of the sentence put at its place."""
        terms, found, fresh = self.terms, {}, False
        used = self.used.setdefault(job.sentence, set())
        ranking = terms.label is not None or terms.keep_close > 0
        for r in sorted(range(len(x)), key=lambda r: (-log_q[r], x[r])):
            if fresh and need == 1 and not ranking:
                break  # the rest rank lower: less likely than a draw that repeats no word
            variant = sentence.variant(job.chosen, [self._text(energy, c) for c in x[r]], log_q[r])
            if variant is not None and variant.text not in job.found and variant.text not in found:
                found[variant.text] = (variant, x[r])
                fresh = fresh or not _words(variant) & used
        if not found:
            return []
        ranked = self._with_terms(job, sentence, energy, list(found.values()))
        gain = [v.score for v, _ in ranked]
        if terms.keep_close > 0:
            gain = [g + terms.keep_close * len(job.chosen) * (v.closeness or 0.0) for g, (v, _) in zip(gain, ranked)]
        if terms.label is not None:
            gain = [g + math.log(max(v.label_probability, 1e-300)) for g, (v, _) in zip(gain, ranked)]
        kept = []
        for _ in range(min(need, len(ranked))):
            k = max(range(len(ranked)), key=lambda k: (gain[k] - VARIETY * len(_words(ranked[k][0]) & used), -k))
            kept.append(ranked.pop(k))
            gain.pop(k)
            used |= _words(kept[-1][0])
        return kept

    def _with_terms(self, job: Job, sentence: Sentence, energy: MaskedLMEnergy, ranked: list) -> list:
        """The candidates ``ranked`` (variant, row) with their closeness (substitutes) and label probability."""
        if sentence.action == "substitute":
            old = [sentence.tokens[i] for i in job.chosen]
            near = closeness(self.embeddings, old, energy.category_ids[torch.tensor([row for _, row in ranked])])
            ranked = [(dataclasses.replace(v, closeness=c), row) for (v, row), c in zip(ranked, near.tolist())]
        if self.terms.label is not None:
            p = self.terms.label.probabilities([v.text for v, _ in ranked])[:, self.terms.targets[job.sentence]]
            ranked = [(dataclasses.replace(v, label_probability=q), row) for (v, row), q in zip(ranked, p.tolist())]
        return ranked

    def _draws(self, energy: MaskedLMEnergy, m: int, generator: torch.Generator) -> tuple[list, list]:
        """``m`` draws of the order, as category index lists, with their log-probabilities under it."""
        first, order = energy.first_pass(), self.order
        if order.blanks is None:
            x = first.argmax(-1)[None]
            if order.sampled:  # by inverting each blank's distribution function: a uniform a draw and blank
                x = torch.multinomial(torch.softmax(first, -1), m, replacement=True, generator=generator).T
            log_q = torch.log_softmax(first, -1).gather(-1, x.T).sum(0)
            return x.tolist(), log_q.tolist()
        x, log_q = mlm_draws.sequential(energy, order, m, generator)
        return x.tolist(), log_q.tolist()

    def _text(self, energy: MaskedLMEnergy, category: int) -> str:
        if category not in self.texts:
            self.texts[category] = fill_text(self.infiller.tokenizer, [energy.category_ids[category].item()])
        return self.texts[category]

    def _avoided(self, categories: torch.Tensor, site: actions.Site) -> torch.Tensor:
        """Which ``categories`` ``site``'s blank may not take, bool ``(K,)``: a number (a draw adds none, as none is
        changed: :func:`~infill.augmentation.words.numeric`), a lone letter where the site's word is longer, a form
        of a word of the site's ``avoid``."""
        if self.never is None:
            numbers, letters = _never(self.infiller.tokenizer)
            self.never = {False: torch.isin(categories, torch.tensor(numbers + letters, dtype=torch.long))}
            self.never[True] = torch.isin(categories, torch.tensor(numbers, dtype=torch.long))
        found = self.never[site.letters]
        for word in site.avoid:
            found = found | self._forms(categories, word)
        return found

    def _forms(self, categories: torch.Tensor, word: str) -> torch.Tensor:
        """Which ``categories`` are a form of ``word`` (its token, any casing), bool ``(K,)``."""
        if word.casefold() not in self.forms:
            found = token_forms(self.infiller.tokenizer, word)
            self.forms[word.casefold()] = torch.isin(categories, torch.tensor(sorted(found), dtype=torch.long))
        return self.forms[word.casefold()]


def _words(variant: Variant) -> set:
    """A variant's new words with their places: (source span, casefolded word) pairs."""
    return {(e.source_span, e.new.casefold()) for e in variant.edits}


@lru_cache(maxsize=8)
def _never(tokenizer) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ordinary tokens that are a number (:func:`~infill.augmentation.words.numeric`) and those that are a lone
    letter: found once a tokenizer, not once a call."""
    texts = token_words(tokenizer)[0]
    numbers = tuple(i for i, text in texts.items() if words.numeric(text))
    return numbers, tuple(i for i, text in texts.items() if len(text) == 1 and text.isalpha())


class Scores:
    """The PLL of the variants kept, a masked copy a blank: read from the template's cache where it holds the copy,
    the others run in passes shared by every template of the call (:func:`infill.lm.packed.logits_at`: passes of
    one length, the head over the masked position alone, in products of many copies), as each template's energy
    would (:meth:`~infill.energies.masked_lm.MaskedLMEnergy.of_indices`), each distinct copy of a template once."""

    def __init__(self):
        self.ids: list[torch.Tensor] = []  # each copy to run: its token ids,
        self.positions: list[int] = []  # the position it reads,
        self.wanted: list[list[tuple[int, int]]] = []  # and its terms, (term, category) pairs
        self.terms: list[float] = []
        self.variants: list[tuple[Job, list[Variant], int, int]] = []  # kept variants: job, them, first term, blanks
        self.model = self.head = None

    def add(self, job: Job, kept: list[Variant], energy: MaskedLMEnergy, x: torch.Tensor) -> int:
        """Take the PLL of ``kept``, category indices ``x (B, d)`` on ``energy``'s template, to :meth:`run`; the
        encoder sequences it will cost."""
        self.model, self.head = energy.model, category_head(energy.model, energy.category_ids)
        if self.head is None:  # a family whose head is not known: the energy's own passes
            before = energy.sequences
            for variant, score in zip(kept, energy.of_indices(x).tolist()):
                job.found[variant.text] = dataclasses.replace(variant, score=score)
            return energy.sequences - before
        b, d = x.shape
        host, start, lacking = x.numpy(force=True), len(self.terms), {}
        rows = np.where(np.eye(d, dtype=bool)[None], MASKED, host[:, None, :]).reshape(b * d, d)
        keys = energy.cache.keys(np.tile(np.arange(d), b), rows)
        self.terms += [0.0] * (b * d)
        self.variants.append((job, kept, start, d))
        for t, (key, row) in enumerate(zip(keys, energy.cache.find(keys))):
            term = (start + t, host[t // d, t % d])
            if row >= 0:
                self._put(energy.cache.logits(torch.tensor([row], device=x.device)), [[term]], [0])
            elif key in lacking:
                self.wanted[lacking[key]].append(term)
            else:
                lacking[key] = len(self.ids)
                position = energy.blank_positions[t % d]
                filled = energy.token_ids(x[t // d][None])[0]
                self.ids.append(filled.index_fill(0, position[None], energy.mask_token_id))
                self.positions.append(position.item())
                self.wanted.append([term])
        return len(lacking)

    def run(self, rows: int) -> None:
        """Run the copies taken, in passes of at most ``rows`` sequences, then give each kept variant its PLL as its
        score; start afresh."""
        for part, logits in packed.logits_at(self.model, self.head, self.ids, self.positions, rows):
            self._put(logits, [self.wanted[c] for c in part], range(len(part)))
        terms = torch.tensor(self.terms)
        for job, kept, start, d in self.variants:
            sums = terms[start : start + len(kept) * d].view(len(kept), d).sum(1).tolist()
            for variant, score in zip(kept, sums):
                job.found[variant.text] = dataclasses.replace(variant, score=score)
        self.__dict__.update(Scores().__dict__)

    def _put(self, logits: torch.Tensor, wanted: list[list[tuple[int, int]]], rows: Sequence[int]) -> None:
        """The terms ``wanted[i]`` ((term, category) pairs) of row ``rows[i]`` of ``logits (N, K)``."""
        log_p = torch.log_softmax(logits, dim=-1)
        for row, terms in zip(rows, wanted):
            for t, category in terms:
                self.terms[t] = log_p[row, category].item()
