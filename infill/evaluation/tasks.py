"""Infilling tasks: seeded choice of sentences, masked word positions, and the reference corpora."""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..errors import InfillError
from .protocol import Protocol

MASK = "[MASK]"


@dataclass(frozen=True)
class Task:
    """One sentence to infill: ``words[i]`` for ``i`` in ``masked`` become blanks."""

    sentence_id: str
    corpus: str
    words: tuple[str, ...]
    masked: tuple[int, ...]

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def template(self) -> str:
        """The sentence with one ``[MASK]`` per masked word (the sampler fills one token per blank)."""
        return " ".join(MASK if i in self.masked else w for i, w in enumerate(self.words))

    def fill(self, fills: list[str]) -> str:
        """The sentence with the blanks replaced by ``fills``, in the corpus' tokenization.

        A WordPiece continuation (``##ing``) is glued to the word before it, as BERT's tokenizer would.
        """
        if len(fills) != len(self.masked):
            raise ValueError(f"{len(fills)} fills for {len(self.masked)} blanks")
        by_position = dict(zip(self.masked, fills))
        words: list[str] = []
        for i, word in enumerate(self.words):
            word = by_position.get(i, word).strip()
            if word.startswith("##") and words:
                words[-1] += word[2:]
            elif word:
                words.append(word)
        return " ".join(words)


def make_tasks(protocol: Protocol, corpora: dict[str, list[list[str]]]) -> list[Task]:
    """``sentences`` distinct sentences of ``min_words``-``max_words`` words per corpus, drawn with the
    protocol's seed, each with its masked positions; corpus by corpus, in the protocol's order."""
    rng = random.Random(protocol.seed)
    tasks = []
    for spec in protocol.corpora:
        seen, candidates = set(), []
        for index, words in enumerate(corpora[spec.name]):
            if protocol.min_words <= len(words) <= protocol.max_words and tuple(words) not in seen:
                seen.add(tuple(words))
                candidates.append(index)
        if len(candidates) < spec.sentences:
            raise InfillError(
                f"corpus {spec.name!r} has {len(candidates)} distinct sentences of "
                f"{protocol.min_words}-{protocol.max_words} words, fewer than the {spec.sentences} asked"
            )
        for index in rng.sample(candidates, spec.sentences):
            words = tuple(corpora[spec.name][index])
            first, stop = (1, len(words) - 1) if protocol.mask.exclude_ends else (0, len(words))
            masked = sorted(rng.sample(range(first, stop), protocol.mask.num_masked(len(words))))
            tasks.append(Task(f"{spec.name}-{index}", spec.name, words, tuple(masked)))
    return tasks


def limit_tasks(tasks: list[Task], limit: int | None) -> list[Task]:
    """The first ``limit`` tasks of each corpus (all with ``None``): a prefix of the seeded selection."""
    if limit is None:
        return tasks
    kept, per_corpus = [], {}
    for task in tasks:
        per_corpus[task.corpus] = per_corpus.get(task.corpus, 0) + 1
        if per_corpus[task.corpus] <= limit:
            kept.append(task)
    return kept


def references(corpora: dict[str, list[list[str]]], tasks: list[Task]) -> dict[str, list[list[str]]]:
    """Each corpus without the chosen sentences (every copy of them), for novelty and corpus BLEU."""
    chosen = {task.words for task in tasks}
    return {name: [words for words in sentences if tuple(words) not in chosen] for name, sentences in corpora.items()}
