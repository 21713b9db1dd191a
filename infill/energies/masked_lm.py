"""The pseudo-log-likelihood energy of a masked language model over the blanks of a template."""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch
from torch import Tensor, nn

from ..lm.models import category_head, logits_at
from ..lm.packed import MIN_ROWS
from .budget import Meter
from .conditionals import CACHE_MIB, MASKED, ConditionalCache, as_bytes

PASS_SEQUENCES = {"cpu": 64, "cuda": 512}
"""Sequences per forward pass of evaluations without gradient, by device type (others take cuda's):
larger CPU passes page-fault fresh activation blocks each time (``scripts/bench.py --passes``)."""


def pass_sequences(device: torch.device, chunk_size: Optional[int] = None) -> int:
    """Sequences a pass without gradient holds at most on ``device``: :data:`PASS_SEQUENCES`, within ``chunk_size``."""
    return min(PASS_SEQUENCES.get(device.type, PASS_SEQUENCES["cuda"]), chunk_size or 1 << 62)


class MaskedLMEnergy:
    """``U(x) = sum_i log p(x_i | [MASK] at blank i, the other blanks filled with x)``.

    ``input_ids (L,)`` is the tokenized template and ``blank_positions (d,)`` its blank slots.
    ``category_ids (K,)`` are the token ids a blank may take (category ``k`` is token ``category_ids[k]``);
    each conditional is normalised over those ``K`` tokens, the sample space.

    ``mask_repeats`` gives the repeat-masked PLL: in blank ``i``'s masked copy every other blank that holds the
    same token as blank ``i`` is masked too, so a repeated token is not predicted by its own copy (the plain PLL
    pays a word repeated at two blanks twice, each copy predicting the other). It equals the PLL wherever no two
    blanks hold the same token, and costs no more sequences.

    The one-hot ``x (B, d, K)`` enters through ``inputs_embeds``: blank ``j`` gets ``x_j @ E[category_ids]``.
    For each chain and each blank ``i`` there is one copy of the sequence with slot ``i`` holding the real
    ``[MASK]`` embedding; all ``B * d`` copies run in one forward pass, and the LM head runs only at the
    masked slots and only over the categories (:func:`infill.lm.models.category_head`). With ``chunk_size``
    set, :meth:`value_and_grad` and evaluations without gradient run the chains in chunks of at most
    ``chunk_size`` copies (whole chains, at least one), forward and backward per chunk, to bound activation
    memory: same values, less peak memory.
    The model is put in eval mode with its parameters frozen (unless it is in eval mode and its first parameter
    frozen already).

    Every pass without gradient (values of one-hot states, :meth:`blank_logits`, :meth:`conditional_logits`)
    reads the logits at a masked slot through ``cache`` (:class:`~.conditionals.ConditionalCache`, keyed by
    the slot and every blank's token or mask): only the sequences it lacks go through the
    encoder, each once however many chains hold it, in passes of at most :data:`PASS_SEQUENCES` (and
    ``chunk_size``); passes with gradient add what they computed. ``cache=None`` gives a private cache of
    :data:`~.conditionals.CACHE_MIB` MiB; a cache of ``max_bytes=0`` keeps nothing.

    ``sequences`` counts the sequences that went through the encoder since the energy was built: every
    masked copy of a forward pass, and each copy again for its backward pass (the unit in which runs
    report their compute: ``encoder_sequences``); ``cache_hits`` the masked copies asked for that did not
    go through it. Each pass is first charged to ``meter`` (:class:`~.budget.Meter`, shared by the energies of
    a run; by default one of no limit), which refuses a pass past its limit before it runs.

    :meth:`first_pass` holds the logits with every blank masked, which every one-pass draw, chain start, particle
    and product search reads first: read once, charged once. ``first`` gives them from a pass shared with other
    templates (:func:`infill.lm.packed.all_masked_logits`): the energy's first pass, where it is that sequence
    alone, takes them instead of running the encoder, charged and counted as it would have been.
    """

    def __init__(
        self,
        model: nn.Module,
        input_ids: Tensor,
        blank_positions: Tensor,
        category_ids: Tensor,
        mask_token_id: int,
        chunk_size: Optional[int] = None,
        cache: Optional[ConditionalCache] = None,
        meter: Optional[Meter] = None,
        mask_repeats: bool = False,
        first: Optional[Tensor] = None,
    ):
        self.mask_repeats = mask_repeats
        if model.training or next(model.parameters()).requires_grad:  # else frozen already: spare the walk
            model.eval().requires_grad_(False)
        self.model = model
        device = model.get_input_embeddings().weight.device
        self.input_ids = input_ids.to(device)
        self.blank_positions = blank_positions.to(device)
        self.category_ids = category_ids.to(device)
        self._host_ids, self._host_positions = self.input_ids.numpy(force=True), self.blank_positions.numpy(force=True)
        self._host_categories = self.category_ids.numpy(force=True)
        self._device = device
        self.mask_token_id = mask_token_id
        self.num_categories = len(category_ids)
        self.chunk_size = chunk_size
        self.cache = ConditionalCache(CACHE_MIB << 20) if cache is None else cache
        self.meter = Meter() if meter is None else meter
        self.pass_sequences = pass_sequences(device, chunk_size)
        self._head = category_head(model, self.category_ids)
        self.sequences = 0
        self.cache_hits = 0
        all_masked = self._host_ids.copy()
        all_masked[self._host_positions] = mask_token_id
        self._given = None if first is None else (all_masked, first)  # the sequence (host) and logits ``first`` gave
        self._first: Optional[Tensor] = None  # first_pass's logits, once read
        self.excluded: Optional[Tensor] = None  # exclude's (d, K) mask: categories a blank's draws may not take

    def exclude(self, excluded: Tensor) -> None:
        """Categories each blank's draws may not take, bool ``(d, K)``: :meth:`blank_logits` (what the one-pass orders
        draw from) gives them ``-inf``; the energy itself (:meth:`of_indices`, the PLL) is unchanged. Augment's
        blanks exclude their source word, so a variant never puts a word back."""
        self.excluded = excluded.to(self._device)
        self._first = None  # read again, with the exclusions

    def first_pass(self) -> Tensor:
        """The logits ``(d, K)`` with every blank masked (:meth:`blank_logits`), read once and held."""
        if self._first is None:
            x = torch.zeros(1, self.num_blanks, dtype=torch.long, device=self._device)
            self._first = self.blank_logits(x, torch.ones_like(x, dtype=torch.bool))[0]
        return self._first

    @property
    def num_blanks(self) -> int:
        return len(self.blank_positions)

    def token_ids(self, x_idx: Tensor) -> Tensor:
        """Full token sequences ``(B, L)`` for category indices ``x_idx (B, d)``."""
        b = x_idx.shape[0]
        return self.input_ids.expand(b, -1).scatter(1, self.blank_positions.expand(b, -1), self.category_ids[x_idx])

    def _charge(self, n: int, ahead: int = 0) -> Optional[tuple[np.ndarray, Tensor]]:
        """Charge and count a pass of ``n`` sequences (``ahead``: the sequences of a backward pass that must
        follow, charged with it); returns what ``first`` gave, which only this pass may take."""
        self.meter.spend(n, ahead)
        self.sequences += n
        given, self._given = self._given, None
        return given

    def _logits_at(self, slots: Tensor, ahead: int, inputs_embeds: Tensor) -> Tensor:
        """Logits ``(N, S, K)`` over the categories at ``slots (N, S)`` of the ``N`` sequences given as
        ``inputs_embeds``, a pass charged with ``ahead`` (:meth:`_charge`); the head runs only at those slots
        where the family's is known."""
        n = slots.shape[0]
        self._charge(n, ahead)
        at = torch.arange(n, device=slots.device)[:, None], slots
        return logits_at(self.model, self._head, at, self.category_ids, inputs_embeds=inputs_embeds)

    def _encode(self, ids: np.ndarray, slots: np.ndarray) -> Tensor:
        """Logits ``(N * S, K)`` over the categories at ``slots (N, S)`` of the token ids ``ids (N, L)`` (host
        arrays, each moved to the device in one copy); the head runs only at those slots where the family's is
        known. The caller charges the pass."""
        rows = np.arange(len(ids)).repeat(slots.shape[1])
        at = tuple(torch.as_tensor(a, device=self._device) for a in (rows, slots.ravel()))
        ids_on = torch.as_tensor(ids, device=self._device)  # at least MIN_ROWS, as the shared first passes encode
        return logits_at(self.model, self._head, at, self.category_ids, MIN_ROWS, input_ids=ids_on)

    def __call__(self, x: Tensor) -> Tensor:
        if torch.is_grad_enabled():  # one graph; value_and_grad chunks the gradient
            return self._pll(x)
        if _is_one_hot(x):
            return self.of_indices(x.argmax(-1))
        return torch.cat([self._pll(x[c]) for c in self._chunks(x)])

    def of_indices(self, x_idx: Tensor) -> Tensor:
        """The energy ``(B,)`` of category indices ``x_idx (B, d)``, its terms read through the cache (no
        one-hot tensor built)."""
        b, d = x_idx.shape
        x = x_idx.numpy(force=True)
        rows = np.where(self._host_copies(x), MASKED, x[:, None, :]).reshape(b * d, d)
        logits = self._read(rows, np.tile(np.arange(d), b)[:, None])
        return torch.log_softmax(logits.view(b, d, -1), dim=-1).gather(-1, x_idx[..., None]).squeeze(-1).sum(1)

    def copies(self, x_idx: Tensor) -> Tensor:
        """Which blanks each PLL term masks, bool ``(B, d, d)``: entry ``[b, i, j]`` where term ``i`` of state ``b``
        masks blank ``j`` (blank ``i`` itself, and with ``mask_repeats`` every blank holding its token)."""
        return torch.as_tensor(self._host_copies(x_idx.numpy(force=True)), device=x_idx.device)

    def _host_copies(self, x: np.ndarray) -> np.ndarray:
        """:meth:`copies` of the host array ``x (B, d)``, a host array."""
        own = np.eye(x.shape[1], dtype=bool)[None].repeat(x.shape[0], 0)
        return own | (x[:, :, None] == x[:, None, :]) if self.mask_repeats else own

    def _chunks(self, x: Tensor) -> tuple[Tensor, ...]:
        """Chain indices in chunks of at most ``chunk_size`` copies (at least one chain each)."""
        b, d, _ = x.shape
        chains = b if self.chunk_size is None else max(1, self.chunk_size // d)
        return torch.arange(b, device=x.device).split(chains)

    def _pll(self, x: Tensor, backward: bool = False) -> Tensor:
        """The energy of chains ``x (B, d, K)`` (``backward``: a backward pass over its copies follows)."""
        b, d, _ = x.shape
        ids, positions = self.input_ids.expand(b, -1), self.blank_positions.expand(b, -1)
        embeddings = self.model.get_input_embeddings().weight
        rows = torch.arange(b, device=x.device)[:, None]
        filled = embeddings[ids]  # (B, L, H)
        filled[rows, positions] = x.to(embeddings.dtype) @ embeddings[self.category_ids]
        copies = filled.unsqueeze(1).expand(b, d, ids.shape[1], -1).clone()  # (B, d, L, H)
        if self.mask_repeats:
            chain, term, blank = self.copies(x.detach().argmax(-1)).nonzero(as_tuple=True)
            copies[chain, term, positions[chain, blank]] = embeddings[self.mask_token_id]
        else:
            copies[rows, torch.arange(d, device=x.device), positions] = embeddings[self.mask_token_id]
        logits = self._logits_at(
            positions.reshape(-1, 1), b * d if backward else 0, inputs_embeds=copies.flatten(0, 1)
        ).reshape(b, d, -1)
        if _is_one_hot(x):
            self._keep(x.detach().argmax(-1), logits.detach())
        return (torch.log_softmax(logits.float(), dim=-1) * x).sum((1, 2))

    def _keep(self, x_idx: Tensor, logits: Tensor) -> None:
        """Put the PLL terms' logits ``(B, d, K)`` of states ``x_idx`` in the cache."""
        self.cache.put(self._term_keys(x_idx), logits.transpose(0, 1).flatten(0, 1))

    def _term_keys(self, x_idx: Tensor) -> list[bytes]:
        """The cache keys of the PLL terms of states ``x_idx (B, d)``, blank by blank: entry ``j * B + b`` is blank
        ``j`` masked in state ``b``."""
        b, d = x_idx.shape
        x = x_idx.numpy(force=True)
        rows = np.where(self._host_copies(x).transpose(1, 0, 2), MASKED, x).reshape(d * b, d)
        return self.cache.keys(np.arange(d).repeat(b), rows)

    def bound(self, x_idx: Tensor) -> Tensor:
        """An upper bound ``(B,)`` of the energy of states ``x_idx (B, d)``: the sum of the PLL terms the cache
        holds (a term it lacks is a log-probability, at most 0); the energy itself where it holds them all."""
        b, d = x_idx.shape
        rows = torch.tensor(self.cache.find(self._term_keys(x_idx)), device=x_idx.device).view(d, b)
        held = rows >= 0
        terms = torch.zeros(d, b, dtype=torch.float64)
        if held.any():
            logits = self.cache.logit(rows[held], x_idx.T[held])
            terms[held.cpu()] = (logits.double() - self.cache.normalisers(rows[held]).double()).cpu()
        out = torch.zeros(b, dtype=torch.float64)
        for j in range(d):  # term by term, in blank order
            out += terms[j]
        return out.float()

    def value_and_grad(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Energies ``(B,)`` and gradients ``(B, d, K)``, chunked by ``chunk_size`` copies if set."""
        values, grads = [], []
        for chunk in self._chunks(x):
            with torch.enable_grad():
                x_chunk = x[chunk].detach().requires_grad_(True)
                value = self._pll(x_chunk, backward=True)
                (grad,) = torch.autograd.grad(value.sum(), x_chunk)
            backward = x_chunk.shape[0] * x_chunk.shape[1]  # the backward pass over the copies
            self.meter.spend(backward)
            self.sequences += backward
            values.append(value.detach())
            grads.append(grad)
        return torch.cat(values), torch.cat(grads)

    def blank_logits(self, x_idx: Tensor, masked: Tensor, read: Optional[Tensor] = None) -> Tensor:
        """The model's logits (float32) over the ``B`` sequences in which blank ``j`` of chain ``b`` holds the
        mask token where ``masked[b, j]`` (bool ``(B, d)``) and category ``x_idx[b, j]`` elsewhere: at every
        blank ``(B, d, K)``, or only at the blanks ``read (B, S)`` of each chain ``(B, S, K)`` (the head runs
        only where it is read, the encoder only for what the cache lacks)."""
        b, d = x_idx.shape
        parts = [x_idx, masked] if read is None else [read, x_idx, masked]
        host = torch.cat(parts, 1).numpy(force=True)  # one copy to the host, as int64 (bools as 0 and 1)
        read = np.broadcast_to(np.arange(d), (b, d)) if read is None else host[:, : -2 * d]
        rows = np.where(host[:, -d:] != 0, MASKED, host[:, -2 * d : -d])
        logits = self._read(rows, read)
        if self.excluded is None:
            return logits
        at = torch.as_tensor(np.array(read, dtype=np.int64), device=self._device)
        return logits.masked_fill(self.excluded[at], -torch.inf)

    @torch.inference_mode()
    def _read(self, rows: np.ndarray, read: np.ndarray) -> Tensor:
        """:meth:`blank_logits` of the sequences ``rows (N, d)`` (each blank's category, or :data:`MASKED`) at the
        blanks ``read (N, S)``, host arrays: cached entries are looked up, the
        sequences holding the others go through the encoder once each. The output is a pass's logits where one
        pass read every output in order; else gathered from the cache at the end where it holds every entry
        read; else written pass by pass."""
        n, s = read.shape
        keys = self.cache.keys(read.ravel(), rows.repeat(s, 0))
        found = self.cache.find(keys)
        wanted, first = _missing(found, rows, read, s)
        self.cache_hits += n - len(wanted)
        held = len(set(found)) - (min(found) < 0) + sum(map(len, wanted.values()))
        pooled = held <= self.cache.capacity(self.num_categories)
        out = None if pooled else torch.empty(n * s, self.num_categories, device=self._device)
        if not pooled and max(found) >= 0:
            hits = [o for o, row in enumerate(found) if row >= 0]
            out[torch.tensor(hits, device=out.device)] = self.cache.logits(
                torch.tensor([found[o] for o in hits], device=out.device)
            )
        sequences = list(wanted)
        for start in range(0, len(sequences), self.pass_sequences):
            part = sequences[start : start + self.pass_sequences]
            chains, slots = [first[q] for q in part], [wanted[q] for q in part]
            logits = self._forward(rows[chains], _read_slots(slots))
            entries, source, target = _placement(slots, keys, logits.shape[0])
            placed = self.cache.put(entries, logits)
            if source == target == list(range(n * s)):  # one pass read every output, in order
                return logits.view(n, s, -1)
            if pooled:
                for i, o in zip(source, target):
                    found[o] = placed[i]
            else:
                out.index_copy_(
                    0,
                    torch.tensor(target, device=out.device),
                    logits.index_select(0, torch.tensor(source, device=out.device)),
                )
        if pooled:
            out = self.cache.logits(torch.tensor(found, device=self._device))
        return out.view(n, s, -1)

    def _forward(self, rows: np.ndarray, read: np.ndarray) -> Tensor:
        """One pass over the sequences ``rows (N, d)``: float32 logits ``(N * S, K)`` at the blanks ``read (N, S)``
        of each, in order (host arrays; the token ids are built on the host and moved to the device in one copy).
        The energy's first pass takes the logits ``first`` gave where it is that sequence alone."""
        ids = np.tile(self._host_ids, (len(rows), 1))
        ids[:, self._host_positions] = np.where(rows == MASKED, self.mask_token_id, self._host_categories[rows])
        given = self._charge(len(ids))
        if given is not None and len(ids) == 1 and np.array_equal(ids[0], given[0]):
            logits = given[1][read[0].tolist()]
        else:
            logits = self._encode(ids, self._host_positions[read])
        return logits if logits.dtype == torch.float32 else logits.float()

    def conditional_logits(self, x_idx: Tensor, i: Tensor) -> Tensor:
        """The model's own logits ``(B, K)`` at blank ``i[b]`` masked, the other blanks filled from ``x_idx``."""
        masked = torch.nn.functional.one_hot(i, self.num_blanks).bool()
        return self.blank_logits(x_idx, masked, read=i[:, None])[:, 0]


def _is_one_hot(x: Tensor) -> bool:
    """Whether every row of ``x (B, d, K)`` is a one-hot vector (a state, not a relaxation)."""
    return bool(((x == 0) | (x == 1)).all() and (x.sum(-1) == 1).all())


def _missing(found: list[int], sequences: np.ndarray, read_at: np.ndarray, s: int) -> tuple[dict, dict]:
    """The outputs the cache lacks (``found`` below 0; ``s`` outputs a row), grouped: a sequence (the row's
    tokens, ``sequences``) -> slot -> its outputs, and a sequence -> the first row holding it."""
    wanted: dict[bytes, dict[int, list[int]]] = {}
    first: dict[bytes, int] = {}
    if min(found) < 0:
        keys, slots = as_bytes(sequences), read_at.ravel().tolist()
        for o, row in enumerate(found):
            if row < 0:
                first.setdefault(keys[o // s], o // s)
                wanted.setdefault(keys[o // s], {}).setdefault(slots[o], []).append(o)
    return wanted, first


def _read_slots(wanted: list[dict[int, list[int]]]) -> np.ndarray:
    """The blanks a pass reads ``(N, width)``: each sequence's ``wanted`` slots in order, padded with its first."""
    width = max(map(len, wanted))
    return np.array([list(w) + [next(iter(w))] * (width - len(w)) for w in wanted])


def _placement(wanted: list[dict[int, list[int]]], keys: list, rows: int) -> tuple[list, list[int], list[int]]:
    """Where a pass's ``rows`` logits go, its sequences' ``wanted`` slots in order, each padded to one width: the
    cache key of each row (None: padding), and the (row, output) pairs it fills."""
    width = rows // len(wanted)
    entries: list[Optional[bytes]] = [None] * rows
    source, target = [], []
    for q, slots in enumerate(wanted):
        for c, outputs in enumerate(slots.values()):
            entries[q * width + c] = keys[outputs[0]]
            source += [q * width + c] * len(outputs)
            target += outputs
    return entries, source, target
