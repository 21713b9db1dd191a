"""Corpus loading through HF ``datasets`` and the papers' normalisation of the bert-gen corpora.

Sentences are whitespace-tokenized (the corpora are pre-tokenized) and, as in Wang & Cho's ``bert-gen``
evaluation reused by DLP and DISCS, lowercased for uncased models, with WikiText-103's ``@@UNKNOWN@@``
mapped to BERT's ``[UNK]`` and the Toronto Book Corpus' LaTeX quotes (`````` and ``''``) mapped to ``"``.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from ..errors import InfillError
from .protocol import CorpusSpec

REPLACEMENTS = {
    "wikitext103": {"@@UNKNOWN@@": "[UNK]"},
    "tbc": {"``": '"', "''": '"'},
    "plain": {},
}
CACHE_DIR = Path(tempfile.gettempdir()) / "infill-datasets-cache"


def normalize(line: str, convention: str, lowercase: bool = True) -> list[str]:
    """The words of one corpus line under ``convention``; mapped words keep their target's case."""
    table = REPLACEMENTS[convention]
    return [table.get(w, w.lower() if lowercase else w) for w in line.split()]


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _load_lines(spec: CorpusSpec) -> list[str]:
    import datasets

    datasets.disable_progress_bars()
    logging.getLogger("datasets").setLevel(logging.ERROR)
    if spec.path is not None:
        if not spec.path.is_file():
            raise InfillError(f"corpus {spec.name!r}: file {spec.path} not found")
        try:
            data = datasets.load_dataset("text", data_files=str(spec.path), split="train", cache_dir=str(CACHE_DIR))
        except Exception as exc:  # e.g. a file that is not UTF-8 text
            raise InfillError(f"corpus {spec.name!r}: cannot read {spec.path} as text: {_first_line(exc)}") from None
    else:
        try:
            data = datasets.load_dataset(spec.dataset, spec.config, split=spec.split, cache_dir=str(CACHE_DIR))
        except Exception as exc:  # the hub and builders raise many types; one line for the user
            raise InfillError(
                f"corpus {spec.name!r}: cannot load dataset {spec.dataset!r}: {_first_line(exc)}"
            ) from None
    if spec.column not in data.column_names:
        raise InfillError(f"corpus {spec.name!r}: no column {spec.column!r} (columns: {', '.join(data.column_names)})")
    return data[spec.column]


def load_corpus(spec: CorpusSpec, lowercase: bool = True) -> list[list[str]]:
    """The non-empty sentences of a corpus, normalised; ``InfillError`` if missing or empty."""
    sentences = [normalize(line, spec.convention, lowercase) for line in _load_lines(spec) if line and line.strip()]
    if not sentences:
        raise InfillError(f"corpus {spec.name!r} is empty")
    return sentences
