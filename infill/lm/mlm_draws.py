"""Fillings drawn from the masked LM itself, without MCMC: chain starts and the baseline methods.

- ``independent``: every blank from the model's conditional with all blanks masked (one forward pass);
- ``argmax``: the all-masked conditional's most likely token at every blank;
- ``left-to-right``: blank ``j`` from the conditional given blanks ``< j`` as drawn and ``>= j`` masked;
- ``random-order``: the same along a uniformly random permutation of the blanks, a new one per draw;
- ``confident-first``: each step fills the still-masked blank whose conditional (given the blanks drawn so
  far) has the highest maximum probability, as MaskGIT and P2 order their steps; ties go to the leftmost;
- ``uniform``: uniformly random categories (no forward pass).

The sequential orders take ``d`` forward passes. The first pass of every method, all blanks masked, is the
same for every draw: it runs once, one sequence, its logits shared by the draws
(:func:`encoder_sequences`). Logits are divided by ``temperature`` before the softmax. Every draw comes from
``generator``. The energy must offer ``blank_logits(x_idx, masked, read) -> (B, S, K)`` and that first pass,
``first_pass() -> (d, K)`` (:class:`~infill.energies.masked_lm.MaskedLMEnergy`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import torch
from torch import Tensor

Blanks = Callable[[int, int, Optional[torch.Generator], torch.device], Tensor]


def in_order(n: int, d: int, generator: Optional[torch.Generator], device: torch.device) -> Tensor:
    """The blanks ``(n, d)`` left to right, for each of ``n`` draws (``generator`` unused)."""
    return torch.arange(d, device=device).expand(n, d)


def shuffled(n: int, d: int, generator: Optional[torch.Generator], device: torch.device) -> Tensor:
    """A uniformly random permutation ``(n, d)`` of the blanks for each of ``n`` draws, from ``generator``."""
    return torch.rand(n, d, generator=generator, device=device).argsort(-1)


@dataclass(frozen=True)
class Order:
    """A method of draws: ``forwards(d)`` the forward passes it costs on ``d`` blank tokens (the first over one
    sequence, the others over the chains; none: uniform categories); ``blanks`` the column order in which it fills
    the blanks one at a time (None: every blank from the first pass); ``confident``: each step fills instead the
    still-masked blank whose conditional is most peaked; ``sampled``: each token drawn from its conditional, else
    its most likely one."""

    forwards: Callable[[int], int]
    blanks: Optional[Blanks] = None
    confident: bool = False
    sampled: bool = True


ORDERS = {
    "uniform": Order(lambda d: 0),
    "independent": Order(lambda d: 1),
    "argmax": Order(lambda d: 1, sampled=False),
    "left-to-right": Order(lambda d: d, in_order),
    "confident-first": Order(lambda d: d, in_order, confident=True),
    "random-order": Order(lambda d: d, shuffled),
}
"""Each method of :func:`draw` by name (the module docstring)."""
CHUNK = 256
"""Draws made at once: a pass's logits at every blank, ``(CHUNK, d, K)``, stay within memory."""

Logits = Callable[[Tensor, Tensor, Tensor], Tensor]


def sample_categorical(logits: Tensor, generator: Optional[torch.Generator]) -> Tensor:
    """One draw per row of ``logits (..., K)`` by the Gumbel-max trick (``-inf`` logits are never drawn)."""
    u = torch.rand(logits.shape, generator=generator, device=logits.device, dtype=logits.dtype)
    log_exponential = u.clamp_min_(torch.finfo(u.dtype).tiny).log_().neg_().log_()  # in place: one buffer
    return torch.argmax(torch.sub(logits, log_exponential, out=log_exponential), dim=-1)  # the Gumbel noise added


def encoder_sequences(method: str, d: int, num_chains: int) -> int:
    """Encoder sequences that ``draw`` spends on ``num_chains`` draws."""
    passes = ORDERS[method].forwards(d)
    return 0 if passes == 0 else 1 + (passes - 1) * num_chains


def most_peaked(log_p: Tensor) -> Tensor:
    """Per row, the column of ``log_p (N, S, K)`` with the highest maximum probability (ties: the leftmost)."""
    return log_p.amax(-1).argmax(-1)


def still_masked(blanks: Optional[Tensor], masked: Tensor, left: int) -> Tensor:
    """The ``left`` entries ``(N, left)`` of each row of ``blanks (N, m)`` (None: every blank, in index order) that
    ``masked (N, d)`` still masks, in their order: every row has as many (the orders fill one blank a row a
    step). A stable sort finds them, so the host need not wait for the device to learn how many there are."""
    if blanks is None:
        return torch.sort(masked, dim=1, stable=True, descending=True).indices[:, :left]
    return blanks.gather(1, torch.sort(masked.gather(1, blanks), dim=1, stable=True, descending=True).indices[:, :left])


def scaled(logits: Tensor, temperature: float) -> Tensor:
    """``logits`` in float32 divided by ``temperature`` (no copy at 1, where it changes nothing)."""
    logits = logits if logits.dtype == torch.float32 else logits.float()
    return logits if temperature == 1 else logits / temperature


@dataclass(frozen=True)
class Drawing:
    """How each step of an order fills a blank: the still-masked blank whose conditional is most peaked where
    ``confident``, else the first read; its category drawn from that conditional at ``temperature`` with
    ``generator``, or, given ``values (N, d)``, replayed from them (what :func:`fill`'s steps share)."""

    confident: bool
    generator: Optional[torch.Generator]
    temperature: float = 1.0
    values: Optional[Tensor] = None


def fill(
    logits: Logits, z: Tensor, blanks: Tensor, drawing: Drawing, first: Optional[Tensor] = None
) -> tuple[Tensor, Tensor, Tensor]:
    """Fill the blanks ``blanks (N, m)`` of ``z (N, d)`` one at a time, each from ``logits(z, masked, read)``
    (``(N, S, K)`` at the blanks ``read (N, S)``) with the blanks not yet filled masked, as ``drawing`` says: in
    the column order of ``blanks`` or most peaked first, drawn or replayed. Returns the filled ``z``, the
    log-probability ``(N,)`` of the fills under the tempered conditionals along the order, and the first step's
    logits (``first`` if given: it is that step's)."""
    n, m = blanks.shape
    z = z.clone()
    masked = torch.zeros_like(z, dtype=torch.bool)
    masked[torch.arange(n, device=z.device)[:, None], blanks] = True
    log_q = torch.zeros(n, device=z.device)
    for t in range(m):
        log_p, step_logits = fill_next(logits, z, masked, blanks, t, drawing, first)
        first = step_logits if t == 0 else first
        log_q = log_q + log_p
    return z, log_q, first


def fill_next(
    logits: Logits,
    z: Tensor,
    masked: Tensor,
    blanks: Optional[Tensor],
    t: int,
    drawing: Drawing,
    first: Optional[Tensor] = None,
) -> tuple[Tensor, Tensor]:
    """Step ``t`` of an order (:func:`fill`) over the rows of ``z (N, d)``, in place: reads :func:`to_read`'s blanks
    from ``logits(z, masked, read)`` (at ``t = 0`` from ``first`` where given: :func:`first_step_logits`), fills one
    blank a row as ``drawing`` says (:func:`step`) and unmasks it in ``masked (N, d)``. Returns the fill's
    log-probability ``(N,)`` and the logits read."""
    rows = torch.arange(z.shape[0], device=z.device)
    read = to_read(blanks, masked, t, drawing.confident)
    step_logits = first if t == 0 and first is not None else logits(z, masked, read)
    j, v, log_p = step(step_logits, read, rows, drawing)
    z[rows, j], masked[rows, j] = v, False
    return log_p, step_logits


def first_step_logits(first: Tensor, blanks: Optional[Tensor], confident: bool) -> Tensor:
    """What the first step of an order reads from the all-masked logits ``first (d, K)``, shared by every row: all
    of them ``(1, d, K)`` where ``confident``, else each row's first blank of ``blanks (N, m)``, ``(N, 1, K)``."""
    return first[None] if confident else first[blanks[:, 0]][:, None]


def to_read(blanks: Optional[Tensor], masked: Tensor, t: int, confident: bool) -> Tensor:
    """The blanks step ``t`` of an order reads: every blank of ``blanks (N, m)`` (None: every blank, in index
    order) still masked, in their order, where ``confident``; else its ``t``-th column (no filled blank is read)."""
    if not confident:
        return blanks[:, t : t + 1]
    return still_masked(blanks, masked, (masked if blanks is None else blanks).shape[1] - t)


def step(logits: Tensor, read: Tensor, rows: Tensor, drawing: Drawing) -> tuple[Tensor, Tensor, Tensor]:
    """One step of an order over ``N`` rows (``rows``: ``arange(N)``): given the logits ``(N or 1, S, K)`` at the
    blanks ``read (N, S)``, the blank ``j (N,)`` it fills (the most peaked where ``drawing.confident``, else the
    first read), the category ``v (N,)`` drawn from its tempered conditional (or replayed from ``drawing.values
    (N, d)``), and that draw's log-probability ``(N,)``."""
    n, temperature = read.shape[0], drawing.temperature
    log_p = torch.log_softmax(scaled(logits, temperature), dim=-1)
    col = most_peaked(log_p) if drawing.confident else torch.zeros_like(rows)
    if logits.shape[0] != n:  # one row for every chain (a shared first pass)
        logits, log_p, col = logits.expand(n, -1, -1), log_p.expand(n, -1, -1), col.expand(n)
    j = read[rows, col]
    if drawing.values is None:
        v = sample_categorical(scaled(logits[rows, col], temperature), drawing.generator)
    else:
        v = drawing.values[rows, j]
    return j, v, log_p[rows, col, v]


def draw(
    energy, method: str, num_chains: int, generator: Optional[torch.Generator], temperature: float = 1.0
) -> Tensor:
    """Category indices ``(num_chains, d)`` drawn by ``method`` (a key of :data:`ORDERS`), in chunks of at most
    :data:`CHUNK` draws (memory stays bounded however many; the chunks draw in turn from ``generator``).
    ``argmax`` on one blank gives the ``num_chains`` most likely tokens, best first (one pass: the exact top of
    the PLL, whose one term is that conditional)."""
    d, k = energy.num_blanks, energy.num_categories
    if method not in ORDERS:
        raise ValueError(f"unknown draw method {method!r}")
    order = ORDERS[method]
    if not order.forwards(d):
        return torch.randint(k, (num_chains, d), generator=generator, device=energy.category_ids.device)
    first = energy.first_pass().expand(num_chains, -1, -1)
    if not order.sampled:
        if d == 1:
            return first[0, 0].topk(min(num_chains, k)).indices[:, None]
        return first[:1].argmax(-1).expand(num_chains, d)
    return torch.cat([_draw(energy, order, part, generator, temperature) for part in first.split(CHUNK)])


def _draw(energy, order: Order, first: Tensor, generator: Optional[torch.Generator], temperature: float) -> Tensor:
    """One chunk of :func:`draw`, ``first (n, d, K)`` the all-masked logits."""
    if order.blanks is None:
        return sample_categorical(first / temperature, generator)
    return sequential(energy, order, first.shape[0], generator, temperature)[0]


def sequential(
    energy, order: Order, n: int, generator: Optional[torch.Generator], temperature: float = 1.0
) -> tuple[Tensor, Tensor]:
    """``n`` draws ``(n, d)`` of a sequential ``order`` (one with ``blanks``) on ``energy``'s blanks, the first step
    read from its first pass, with their log-probabilities ``(n,)`` under the order."""
    first = energy.first_pass()
    blanks = order.blanks(n, first.shape[0], generator, first.device)
    x = torch.zeros(n, first.shape[0], dtype=torch.long, device=first.device)
    opening = first_step_logits(first, blanks, order.confident)
    return fill(energy.blank_logits, x, blanks, Drawing(order.confident, generator, temperature), opening)[:2]
