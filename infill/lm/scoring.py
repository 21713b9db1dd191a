"""Sentence scores from a masked LM: the pseudo-log-likelihood (PLL, Salazar et al. 2020) and its
``word-l2r`` variant (Kauf & Ivanova 2023), and the ranking of given fills of a template by it.

The PLL of a sentence is the sum over its tokens of ``log p(token_t | the sentence with t masked)``.
``word-l2r`` masks token ``t`` and the pieces of the same word to its right, so that a word split into
pieces is not scored from its own later pieces (which inflates the PLL of rare, many-piece words).
A text longer than the model is scored token by token, each in the window of the text centred on it
(:data:`WINDOW` tokens by default, at most the model's; :func:`score`).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional, Sequence

import torch
from torch import Tensor, nn

from ..errors import InfillError, positive_integer
from ..text.blanks import BLANK
from . import MIN_SCORE_WINDOW as MIN_WINDOW
from . import SCORE_WINDOW as WINDOW
from .models import logits_at, max_length, prediction_head

MODES = ("pll", "word-l2r", "repeat-masked")
PASS_TOKENS = 1 << 14
"""Tokens a forward pass of :func:`token_scores` holds at most (its copies times its width; one copy at
least), besides ``max_copies``: its activations stay bounded however long the sequences are."""


def masked_spans(scored: Tensor, attention_mask: Tensor, word_starts: Optional[Tensor]) -> Tensor:
    """(B, L) -> (B, L) int: how many positions from ``t`` on are masked to score token ``t``: 1 for the
    PLL (``word_starts`` None), else ``t`` and the following non-word-initial attended tokens."""
    spans = scored.long()
    if word_starts is None:
        return spans
    cont = (~word_starts.bool()) & attention_mask.bool()  # a piece continuing the word to its left
    run = torch.zeros_like(spans)  # run[t]: length of the run of continuing pieces starting at t
    for t in range(cont.shape[1] - 2, -1, -1):
        run[:, t] = torch.where(cont[:, t + 1], run[:, t + 1] + 1, 0)
    return torch.where(scored, 1 + run, 0)


def _passes(widths: list[int], max_copies: int) -> list[tuple[int, int]]:
    """``(start, end)`` of the passes over copies of ascending ``widths``: consecutive runs of at most
    ``max_copies`` copies and :data:`PASS_TOKENS` tokens (the run's copies times its widest), one copy at least."""
    runs, start = [], 0
    for end, width in enumerate(widths, 1):
        if end - 1 > start and (end - start > max_copies or (end - start) * width > PASS_TOKENS):
            runs.append((start, end - 1))
            start = end - 1
    if len(widths) > start:
        runs.append((start, len(widths)))
    return runs


@torch.no_grad()
def token_scores(
    model: nn.Module,
    input_ids: Tensor,
    attention_mask: Tensor,
    scored: Tensor,
    word_l2r: bool = False,
    word_starts: Optional[Tensor] = None,
    max_copies: int = 512,
    *,
    mask_token_id: Optional[int] = None,
    charge: Optional[Callable[[int], None]] = None,
    repeats: bool = False,
    progress: Optional[Callable[[int], None]] = None,
) -> tuple[Tensor, int]:
    """``log p(token_t | sequence with t masked)`` at every ``scored`` position of the (B, L) right-padded
    batch (0 elsewhere), as float32, and the number of masked copies that went through the encoder.

    With ``word_l2r``, token ``t`` is scored with ``t`` and the following pieces of its word masked
    (``word_starts`` marks word-initial tokens; mark special tokens as starts); with ``repeats``, with every
    other scored token equal to it masked too. All copies of all sequences
    go through the model in passes of at most ``max_copies`` copies and :data:`PASS_TOKENS` tokens, each pass
    cut to its longest sequence, and a copy that several sentences share (duplicates, options of one blank)
    goes through once; the LM head runs only at the scored slot of each copy where the family's head is
    known. ``mask_token_id`` defaults to ``model.config.mask_token_id`` (BERT configs have none: pass
    ``tokenizer.mask_token_id``). ``charge(copies)``, where given, is called with the number of copies before
    any goes through the model (a budget's meter, which may refuse them); ``progress(n)`` after each pass with
    the number of scored positions it answered.
    """
    if word_l2r and word_starts is None:
        raise InfillError("word-l2r scoring needs word_starts")
    mask_id = mask_token_id if mask_token_id is not None else getattr(model.config, "mask_token_id", None)
    if mask_id is None:
        raise InfillError("token_scores needs the mask token id: pass mask_token_id=tokenizer.mask_token_id")
    scored = scored.bool() & attention_mask.bool()
    rows, slots, unique, inverse = _copies(
        input_ids, attention_mask, scored, word_starts if word_l2r else None, mask_id, repeats
    )
    if charge is not None:
        charge(len(unique))
    return _answer(model, input_ids, attention_mask, (rows, slots, unique, inverse), max_copies, progress), len(unique)


def _copies(
    input_ids: Tensor, attention_mask: Tensor, scored: Tensor, starts: Optional[Tensor], mask_id: int, repeats: bool
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Every ``scored`` position's ``(row, slot)``, the distinct masked copies (ids, attention mask and slot: all
    of it the key, so a copy that several sentences share is one) and each position's copy among them."""
    spans = masked_spans(scored, attention_mask, starts)
    rows, slots = scored.nonzero(as_tuple=True)
    positions = torch.arange(input_ids.shape[1], device=input_ids.device)
    masked = (positions >= slots[:, None]) & (positions < (slots + spans[rows, slots])[:, None])
    if repeats:
        masked |= scored[rows] & (input_ids[rows] == input_ids[rows, slots][:, None])
    copies = input_ids[rows].masked_fill(masked, mask_id)
    copies = torch.cat([copies, attention_mask[rows], slots[:, None]], 1)  # ids first; all of it is the key
    unique, inverse = torch.unique(copies, dim=0, return_inverse=True)
    return rows, slots, unique, inverse


def _answer(
    model: nn.Module,
    input_ids: Tensor,
    attention_mask: Tensor,
    copies: tuple[Tensor, Tensor, Tensor, Tensor],
    max_copies: int,
    progress: Optional[Callable[[int], None]],
) -> Tensor:
    """The scores :func:`token_scores` returns, from ``copies`` (:func:`_copies`) run through the model in
    passes of similar lengths."""
    rows, slots, unique, inverse = copies
    lengths = attention_mask.long().cumsum(1).argmax(1) + 1  # last attended position + 1 per sequence
    first = torch.full((len(unique),), len(rows), device=rows.device).scatter_reduce(
        0, inverse, torch.arange(len(rows), device=rows.device), "amin"
    )
    order = torch.argsort(lengths[rows[first]], stable=True)  # similar lengths share a pass: less padding
    head = prediction_head(model)
    out = torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
    for start, end in _passes(lengths[rows[first[order]]].tolist(), max_copies):
        u = order[start:end]
        r, s = rows[first[u]], slots[first[u]]
        width = int(lengths[r].max())
        at = torch.arange(len(u), device=rows.device), s
        logits = logits_at(model, head, at, input_ids=unique[u, :width], attention_mask=attention_mask[r, :width])
        logp = torch.log_softmax(logits.float(), dim=-1)
        position = torch.full((len(unique),), -1, device=rows.device)
        position[u] = torch.arange(len(u), device=rows.device)
        mine = (position[inverse] >= 0).nonzero().flatten()  # every copy this pass answers
        out[rows[mine], slots[mine]] = logp[position[inverse[mine]], input_ids[rows[mine], slots[mine]]]
        if progress is not None:
            progress(len(mine))
    return out


class SentenceScore(NamedTuple):
    """A sentence's score (the sum of its token scores, nats) and ``(token, log-probability)`` per token."""

    total: float
    tokens: list[tuple[str, float]]


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise InfillError(f"scoring mode must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


def check_texts(tokenizer, texts: Sequence[str], labels: Optional[Sequence[str]] = None) -> list[int]:
    """How many tokens each text has to score (its tokens less the special ones); one-line
    :class:`InfillError` for a text that is not a string or is empty; ``labels`` name the texts in messages
    (default ``sentence N``)."""
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise InfillError("score takes a list of sentences (strings)")
    counts = []
    for n, text in enumerate(texts):
        if not text.strip():
            raise InfillError(f"{labels[n] if labels else f'sentence {n + 1}'} is empty")
        special = tokenizer(text, return_special_tokens_mask=True, verbose=False)["special_tokens_mask"]
        counts.append(len(special) - sum(special))
    return counts


def check_window(window: Any, name: str = "window") -> Optional[int]:
    """``window`` if it is ``None`` (the model's maximum) or an integer of at least :data:`MIN_WINDOW`, else one
    line naming ``name``."""
    return None if window is None else positive_integer(name, window, minimum=MIN_WINDOW)


def score(
    model: nn.Module,
    tokenizer,
    texts: Sequence[str],
    mode: str = "pll",
    max_copies: int = 512,
    progress: Optional[Callable[[int], None]] = None,
    *,
    window: Optional[int] = WINDOW,
) -> list[SentenceScore]:
    """The PLL (``mode="pll"``), PLL-word-l2r (``"word-l2r"``) or repeat-masked PLL of each text, with
    per-token scores (special tokens are context, not scored); one-line :class:`InfillError` for an empty text
    or a ``window`` that is not an integer of at least :data:`MIN_WINDOW` (or ``None``).

    A text that fits the model is scored whole, as minicons scores it. A longer one is scored in windows of ``C``
    of its tokens, ``C`` the ``window`` clipped to the model's maximum length less its special tokens (``None``:
    that maximum): each token's masked copy is the window centred on it (``(C - 1) // 2`` tokens to its left), slid
    to stay within the text, between the special tokens. So each token is scored with ``C - 1`` tokens of
    context, at least ``(C - 1) // 2`` on each side where the text has them (else all the text on that side),
    and costs a copy of ``C`` tokens however long the text. The PLL takes a masked copy per token whatever the
    windows, so a stride of one token costs no more copies than a longer one. ``word-l2r`` masks the rest of the word
    within the window; ``repeat-masked`` the other copies of the token within it. Copies go through in the
    passes of :func:`token_scores` (at most ``max_copies``), and a long text's are built ``max_copies`` at a
    time: memory is bounded by a pass, not by the text. ``progress(n)`` is called after each pass with the
    number of tokens it scored."""
    check_mode(mode)
    check_window(window)
    check_texts(tokenizer, texts)
    if mode == "word-l2r" and not getattr(tokenizer, "is_fast", False):
        raise InfillError("word-l2r scoring needs a fast tokenizer (its word boundaries)")
    if not texts:
        return []
    limit = max_length(tokenizer, model.config)
    encoded = tokenizer(list(texts), return_special_tokens_mask=True, verbose=False)
    specials = [sum(special) for special in encoded["special_tokens_mask"]]
    sizes = [limit - n if window is None else min(window, limit - n) for n in specials]  # each text's C
    whole = [b for b, ids in enumerate(encoded["input_ids"]) if len(ids) <= limit]
    scores = dict(zip(whole, _whole(model, tokenizer, [texts[b] for b in whole], mode, max_copies, progress)))
    return [
        scores[b]
        if b in scores
        else _windowed(model, tokenizer, encoded, b, sizes[b] + specials[b], mode, max_copies, progress)
        for b in range(len(texts))
    ]


def _word_starts(words: list[Optional[int]]) -> Tensor:
    """Word-initial tokens of a sequence given its tokens' word ids (special tokens and padding count as starts)."""
    return torch.tensor([t == 0 or w is None or w != words[t - 1] for t, w in enumerate(words)])


def _whole(model, tokenizer, texts: list[str], mode: str, max_copies: int, progress) -> list[SentenceScore]:
    """:func:`score` of texts that fit the model: one batch, each text whole."""
    if not texts:
        return []
    batch = tokenizer(texts, padding=True, return_special_tokens_mask=True, return_tensors="pt", verbose=False)
    device = model.get_input_embeddings().weight.device
    ids, attention = batch["input_ids"].to(device), batch["attention_mask"].to(device)
    scored = (batch["special_tokens_mask"] == 0).to(device) & attention.bool()
    starts = None
    if mode == "word-l2r":
        starts = torch.stack([_word_starts(batch.word_ids(b)) for b in range(len(texts))]).to(device)
    logp, _ = token_scores(
        model,
        ids,
        attention,
        scored,
        word_l2r=mode == "word-l2r",
        word_starts=starts,
        repeats=mode == "repeat-masked",
        max_copies=max_copies,
        mask_token_id=tokenizer.mask_token_id,
        progress=progress,
    )
    out = []
    for b in range(len(texts)):
        positions = scored[b].nonzero().flatten().tolist()
        tokens = tokenizer.convert_ids_to_tokens(ids[b, positions].tolist())
        values = logp[b, positions].tolist()
        out.append(SentenceScore(float(sum(values)), list(zip(tokens, values))))
    return out


def windows(targets: Tensor, length: int, head: int, tail: int, limit: int) -> Tensor:
    """``(T, limit)``: the positions, in a sequence of ``length`` tokens that begins with ``head`` special
    tokens and ends with ``tail``, of the window of each of the ``targets (T,)``: the special tokens around
    the ``limit - head - tail`` tokens of text centred on the target, slid to stay within the text."""
    size = limit - head - tail
    begin = (targets - (size - 1) // 2).clamp(head, length - tail - size)
    around = (torch.arange(head).expand(len(targets), -1), torch.arange(length - tail, length).expand(len(targets), -1))
    return torch.cat([around[0], begin[:, None] + torch.arange(size), around[1]], 1)


def _windowed(model, tokenizer, encoded, b: int, limit: int, mode: str, max_copies: int, progress) -> SentenceScore:
    """:func:`score` of the ``b``-th of the ``encoded`` texts, longer than its window: each token in its copy of
    ``limit`` tokens, special ones included (:func:`windows`), ``max_copies`` copies at a time."""
    ids = torch.tensor(encoded["input_ids"][b])
    special = torch.tensor(encoded["special_tokens_mask"][b], dtype=torch.bool)
    starts = _word_starts(encoded.word_ids(b)) if mode == "word-l2r" else None
    head, tail = int(special.cumprod(0).sum()), int(special.flip(0).cumprod(0).sum())
    targets = (~special).nonzero().flatten()
    device = model.get_input_embeddings().weight.device
    values = []
    for chunk in targets.split(max_copies):
        at = windows(chunk, len(ids), head, tail, limit)
        rows = torch.arange(len(chunk))
        scored = torch.zeros(at.shape, dtype=torch.bool)
        scored[rows, head + chunk - at[:, head]] = True
        window = ids[at]
        if mode == "repeat-masked":  # the other copies of the token in its window masked too
            window = window.masked_fill(~special[at] & ~scored & (window == ids[chunk, None]), tokenizer.mask_token_id)
        logp, _ = token_scores(
            model,
            window.to(device),
            torch.ones_like(window).to(device),
            scored.to(device),
            word_l2r=mode == "word-l2r",
            word_starts=None if starts is None else starts[at].to(device),
            max_copies=max_copies,
            mask_token_id=tokenizer.mask_token_id,
            progress=progress,
        )
        values += logp[scored.to(device)].tolist()
    tokens = tokenizer.convert_ids_to_tokens(ids[targets].tolist())
    return SentenceScore(float(sum(values)), list(zip(tokens, values)))


class Ranked(NamedTuple):
    """One option of :func:`rank`: the fill, the whole sentence with it, and that sentence's score."""

    option: str
    text: str
    score: SentenceScore


def splice(template: str, options: Sequence[str]) -> list[str]:
    """The template's one blank (``[MASK]``, of any length) replaced by each option; one-line errors for a
    template without exactly one blank or an empty option."""
    if not isinstance(template, str):
        raise InfillError(f"a template must be a string, got {type(template).__name__}")
    blanks = BLANK.findall(template)
    if len(blanks) != 1 or "[MASK" in BLANK.sub("", template).upper():
        raise InfillError(f"rank needs a template with exactly one [MASK] blank, got {len(blanks)}: {template!r}")
    if isinstance(options, str) or not options:
        raise InfillError("give at least one option to rank")
    for option in options:
        if not isinstance(option, str) or not option.strip():
            raise InfillError(f"an option must be a non-empty string, got {option!r}")
    return [BLANK.sub(lambda _: " ".join(option.split()), template, count=1) for option in options]


def rank(
    model: nn.Module,
    tokenizer,
    template: str,
    options: Sequence[str],
    mode: str = "pll",
    max_copies: int = 512,
    progress: Optional[Callable[[int], None]] = None,
    *,
    window: Optional[int] = WINDOW,
) -> list[Ranked]:
    """``options`` (fills of the template's one blank: a word, several words or word pieces) ranked by the
    :func:`score` of the whole sentence each makes (a sentence longer than the model in windows), best first
    (ties keep the given order)."""
    check_mode(mode)
    check_window(window)
    texts = splice(template, options)
    scores = score(model, tokenizer, texts, mode, max_copies, progress, window=window)
    ranked = [Ranked(option, text, s) for option, text, s in zip(options, texts, scores)]
    return sorted(ranked, key=lambda r: -r.score.total)
