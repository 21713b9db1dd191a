"""Sentence scores from a masked LM: the pseudo-log-likelihood (PLL, Salazar et al. 2020) and its
``word-l2r`` variant (Kauf & Ivanova 2023), and the ranking of given fills of a template by it.

The PLL of a sentence is the sum over its tokens of ``log p(token_t | the sentence with t masked)``.
``word-l2r`` masks token ``t`` and the pieces of the same word to its right, so that a word split into
pieces is not scored from its own later pieces (which inflates the PLL of rare, many-piece words).
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional, Sequence

import torch
from torch import Tensor, nn

from ..errors import InfillError
from ..text.blanks import BLANK
from .models import max_length, prediction_head

MODES = ("pll", "word-l2r", "repeat-masked")


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


def _logits_at(model: nn.Module, head, ids: Tensor, attention: Tensor, slots: Tensor) -> Tensor:
    rows = torch.arange(ids.shape[0], device=ids.device)
    if head is None:
        return model(input_ids=ids, attention_mask=attention).logits[rows, slots]
    return head(model.base_model(input_ids=ids, attention_mask=attention)[0][rows, slots])


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
) -> tuple[Tensor, int]:
    """``log p(token_t | sequence with t masked)`` at every ``scored`` position of the (B, L) right-padded
    batch (0 elsewhere), as float32, and the number of masked copies that went through the encoder.

    With ``word_l2r``, token ``t`` is scored with ``t`` and the following pieces of its word masked
    (``word_starts`` marks word-initial tokens; mark special tokens as starts); with ``repeats``, with every
    other scored token equal to it masked too. All copies of all sequences
    go through the model in passes of at most ``max_copies``, each pass cut to its longest sequence, and a
    copy that several sentences share (duplicates, options of one blank) goes through once; the LM head
    runs only at the scored slot of each copy where the family's head is known. ``mask_token_id``
    defaults to ``model.config.mask_token_id`` (BERT configs have none: pass ``tokenizer.mask_token_id``).
    ``charge(copies)``, where given, is called with the number of copies before any goes through the model
    (a budget's meter, which may refuse them).
    """
    if word_l2r and word_starts is None:
        raise InfillError("word-l2r scoring needs word_starts")
    scored = scored.bool() & attention_mask.bool()
    spans = masked_spans(scored, attention_mask, word_starts if word_l2r else None)
    rows, slots = scored.nonzero(as_tuple=True)
    mask_id = mask_token_id if mask_token_id is not None else getattr(model.config, "mask_token_id", None)
    if mask_id is None:
        raise InfillError("token_scores needs the mask token id: pass mask_token_id=tokenizer.mask_token_id")
    positions = torch.arange(input_ids.shape[1], device=input_ids.device)
    masked = (positions >= slots[:, None]) & (positions < (slots + spans[rows, slots])[:, None])
    if repeats:
        masked |= scored[rows] & (input_ids[rows] == input_ids[rows, slots][:, None])
    copies = input_ids[rows].masked_fill(masked, mask_id)
    copies = torch.cat([copies, attention_mask[rows], slots[:, None]], 1)  # ids first; all of it is the key
    unique, inverse = torch.unique(copies, dim=0, return_inverse=True)  # a copy shared by sentences runs once
    if charge is not None:
        charge(len(unique))
    lengths = attention_mask.long().cumsum(1).argmax(1) + 1  # last attended position + 1 per sequence
    first = torch.full((len(unique),), len(rows), device=rows.device).scatter_reduce(
        0, inverse, torch.arange(len(rows), device=rows.device), "amin"
    )
    order = torch.argsort(lengths[rows[first]], stable=True)  # similar lengths share a pass: less padding
    head = prediction_head(model)
    out = torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
    for start in range(0, len(order), max_copies):
        u = order[start : start + max_copies]
        r, s = rows[first[u]], slots[first[u]]
        width = int(lengths[r].max())
        logits = _logits_at(model, head, unique[u, :width], attention_mask[r, :width], s)
        logp = torch.log_softmax(logits.float(), dim=-1)
        position = torch.full((len(unique),), -1, device=rows.device)
        position[u] = torch.arange(len(u), device=rows.device)
        mine = (position[inverse] >= 0).nonzero().flatten()  # every copy this pass answers
        out[rows[mine], slots[mine]] = logp[position[inverse[mine]], input_ids[rows[mine], slots[mine]]]
    return out, len(unique)


class SentenceScore(NamedTuple):
    """A sentence's score (the sum of its token scores, nats) and ``(token, log-probability)`` per token."""

    total: float
    tokens: list[tuple[str, float]]


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise InfillError(f"scoring mode must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


def check_texts(model: nn.Module, tokenizer, texts: Sequence[str], labels: Optional[Sequence[str]] = None) -> None:
    """One-line :class:`InfillError` for a text that is not a string, empty, or longer than the model takes;
    ``labels`` name the texts in messages (default ``sentence N``)."""
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise InfillError("score takes a list of sentences (strings)")
    limit = max_length(tokenizer, model.config)
    for n, text in enumerate(texts):
        label = labels[n] if labels else f"sentence {n + 1}"
        if not text.strip():
            raise InfillError(f"{label} is empty")
        length = len(tokenizer(text, verbose=False)["input_ids"])
        if length > limit:
            raise InfillError(f"{label} is {length} tokens, longer than the model's maximum of {limit}")


def score(
    model: nn.Module, tokenizer, texts: Sequence[str], mode: str = "pll", max_copies: int = 512
) -> list[SentenceScore]:
    """The PLL (``mode="pll"``) or PLL-word-l2r (``"word-l2r"``) of each text, with per-token scores
    (special tokens are context, not scored); one-line :class:`InfillError` for an empty or too long text."""
    check_mode(mode)
    check_texts(model, tokenizer, texts)
    if not texts:
        return []
    batch = tokenizer(list(texts), padding=True, return_special_tokens_mask=True, return_tensors="pt", verbose=False)
    device = model.get_input_embeddings().weight.device
    ids, attention = batch["input_ids"].to(device), batch["attention_mask"].to(device)
    scored = (batch["special_tokens_mask"] == 0).to(device) & attention.bool()
    starts = None
    if mode == "word-l2r":
        if not getattr(tokenizer, "is_fast", False):
            raise InfillError("word-l2r scoring needs a fast tokenizer (its word boundaries)")
        starts = torch.ones_like(scored)
        for b in range(len(texts)):
            words = batch.word_ids(b)
            for t in range(1, len(words)):
                starts[b, t] = words[t] is None or words[t] != words[t - 1]
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
    )
    out = []
    for b in range(len(texts)):
        positions = scored[b].nonzero().flatten().tolist()
        tokens = tokenizer.convert_ids_to_tokens(ids[b, positions].tolist())
        values = logp[b, positions].tolist()
        out.append(SentenceScore(float(sum(values)), list(zip(tokens, values))))
    return out


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
    model: nn.Module, tokenizer, template: str, options: Sequence[str], mode: str = "pll", max_copies: int = 512
) -> list[Ranked]:
    """``options`` (fills of the template's one blank: a word, several words or word pieces) ranked by the
    score of the whole sentence each makes, best first (ties keep the given order)."""
    check_mode(mode)
    texts = splice(template, options)
    scores = score(model, tokenizer, texts, mode, max_copies)
    ranked = [Ranked(option, text, s) for option, text, s in zip(options, texts, scores)]
    return sorted(ranked, key=lambda r: -r.score.total)
