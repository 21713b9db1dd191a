"""Raw text -> sentences (pysbd; nltk's punkt needs a download), the cleaned sentence set, word counts."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ..errors import InfillError


def decode_text(data: bytes, source: str = "the input") -> str:
    """UTF-8 text of ``data``; a clear error for binary or non-UTF-8 bytes."""
    if b"\x00" in data:
        raise InfillError(f"{source} looks like binary data, not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InfillError(f"{source} is not UTF-8 text (bad byte at offset {exc.start})") from None
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r\f\v")
    if controls > max(8, len(text) // 100):
        raise InfillError(f"{source} looks like binary data, not text")
    return text


@functools.lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


_WINDOW = 4000  # characters; pysbd's time grows with the square of its input's length


def _segment(paragraph: str) -> list[str]:
    """pysbd's sentences of ``paragraph`` in overlapping windows: each window's last sentence, which the
    window may have cut, is segmented again at the start of the next one. Linear time; on rare
    boundaries the result differs from one pysbd call on the whole paragraph."""
    out, start, size = [], 0, _WINDOW
    while start < len(paragraph):
        parts = _segmenter().segment(paragraph[start : start + size])
        if start + size >= len(paragraph):
            return out + parts
        if len(parts) < 2:  # one sentence longer than the window
            size *= 2
            continue
        out += parts[:-1]
        start += sum(len(p) for p in parts[:-1])  # with clean=False the parts add up to the input
        size = _WINDOW
    return out


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (pysbd, English), whitespace-normalised, empty ones dropped.

    Blank lines are paragraph breaks: each paragraph is segmented on its own, so a heading or list
    item without final punctuation does not swallow the next sentence.
    """
    sentences = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = " ".join(paragraph.split())
        if not paragraph:
            continue
        for sentence in _segment(paragraph):
            sentence = " ".join(sentence.split())
            if sentence:
                sentences.append(sentence)
    return sentences


def word_count(sentence: str) -> int:
    """Whitespace words: the unit of a word budget."""
    return len(sentence.split())


_WORD = re.compile(r"[^\W\d_]{2,}")  # a run of two or more letters


def has_content_word(sentence: str, stop_words: frozenset = frozenset()) -> bool:
    """Whether ``sentence`` has a word of two or more letters that is not in ``stop_words``."""
    return any(w.lower() not in stop_words for w in _WORD.findall(sentence))


@dataclass(frozen=True)
class SentenceSet:
    """The sentences a summary is chosen from: ``kept[j]`` is sentence ``indices[j]`` of the document;
    ``dropped`` lists ``(index, sentence, reason)`` for the others."""

    kept: list[str]
    indices: list[int]
    dropped: list[tuple[int, str, str]]


def clean_sentences(sentences: list[str]) -> SentenceSet:
    """Drop sentences without a content word (a word of two or more letters not among scikit-learn's
    English stop words: ``"."``, ``"•"``, ``"1."``, ``"It is."``)
    and exact repeats of an earlier sentence. Neither can add coverage that another sentence lacks, yet
    they cost budget and confuse the votes."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    kept, indices, dropped, seen = [], [], [], set()
    for i, sentence in enumerate(sentences):
        if not has_content_word(sentence, ENGLISH_STOP_WORDS):
            dropped.append((i, sentence, "no content word"))
        elif sentence in seen:
            dropped.append((i, sentence, "duplicate"))
        else:
            seen.add(sentence)
            kept.append(sentence)
            indices.append(i)
    return SentenceSet(kept, indices, dropped)
