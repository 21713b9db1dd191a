"""The pseudo-log-likelihood energy of a masked language model over the blanks of a template."""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from ..models import prediction_head


class MaskedLMEnergy:
    """``U(x) = sum_i log p(x_i | [MASK] at blank i, the other blanks filled with x)``.

    ``input_ids (L,)`` is the tokenized template and ``blank_positions (d,)`` its blank slots; several
    templates of equal length and blank count may be stacked, ``(G, L)`` and ``(G, d)``: the ``B`` chains
    are then split into ``G`` equal contiguous blocks, block ``g`` filling template ``g``.
    ``category_ids (K,)`` are the token ids a blank may take (category ``k`` is token ``category_ids[k]``);
    each conditional is normalised over those ``K`` tokens, the sample space.

    The one-hot ``x (B, d, K)`` enters through ``inputs_embeds``: blank ``j`` gets ``x_j @ E[category_ids]``.
    For each chain and each blank ``i`` there is one copy of the sequence with slot ``i`` holding the real
    ``[MASK]`` embedding; all ``B * d`` copies run in one forward pass, and the LM head runs only at the
    masked slots (:func:`infill.models.prediction_head`). With ``chunk_size`` set, :meth:`value_and_grad`
    and evaluations without gradient run the chains in chunks of at most ``chunk_size`` copies (whole
    chains, at least one), forward and backward per chunk, to bound activation memory: same values, less
    peak memory.
    The model is put in eval mode with its parameters frozen.

    ``sequences`` counts the sequences that went through the encoder since the energy was built: every
    masked copy of a forward pass, and each copy again for its backward pass (the unit in which runs
    report their compute: ``encoder_sequences``).
    """

    def __init__(self, model: nn.Module, input_ids: Tensor, blank_positions: Tensor, category_ids: Tensor,
                 mask_token_id: int, chunk_size: Optional[int] = None):
        self.model = model.eval().requires_grad_(False)
        device = model.get_input_embeddings().weight.device
        self.input_ids = torch.atleast_2d(input_ids).to(device)
        self.blank_positions = torch.atleast_2d(blank_positions).to(device)
        self.category_ids = category_ids.to(device)
        self.mask_token_id = mask_token_id
        self.num_categories = len(category_ids)
        self.chunk_size = chunk_size
        self._head = prediction_head(model)
        self.sequences = 0

    def template(self, g: int) -> "MaskedLMEnergy":
        """The energy of stacked template ``g`` alone: same model, categories and chunking, its own count."""
        return MaskedLMEnergy(self.model, self.input_ids[g], self.blank_positions[g], self.category_ids,
                              self.mask_token_id, self.chunk_size)

    @property
    def num_blanks(self) -> int:
        return self.blank_positions.shape[1]

    def _templates(self, b: int) -> tuple[Tensor, Tensor]:
        """Token ids ``(B, L)`` and blank positions ``(B, d)`` of each chain's template."""
        g = len(self.input_ids)
        if b % g:
            raise ValueError(f"{b} chains do not split evenly over {g} templates")
        t = torch.arange(b, device=self.input_ids.device) // (b // g)
        return self.input_ids[t], self.blank_positions[t]

    def token_ids(self, x_idx: Tensor) -> Tensor:
        """Full token sequences ``(B, L)`` for category indices ``x_idx (B, d)``."""
        ids, positions = self._templates(x_idx.shape[0])
        return ids.scatter(1, positions, self.category_ids[x_idx])

    def _logits_at(self, slots: Tensor, **inputs: Tensor) -> Tensor:
        """Logits ``(N, S, K)`` over the categories at ``slots (N, S)`` of the ``N`` sequences given as
        ``input_ids`` or ``inputs_embeds``; the head runs only at those slots where the family's is known."""
        rows = torch.arange(len(slots), device=slots.device)[:, None]
        self.sequences += len(slots)
        if self._head is None:
            return self.model(**inputs).logits[rows, slots][..., self.category_ids]
        return self._head(self.model.base_model(**inputs)[0][rows, slots])[..., self.category_ids]

    def __call__(self, x: Tensor) -> Tensor:
        ids, positions = self._templates(x.shape[0])
        if torch.is_grad_enabled():  # one graph; value_and_grad chunks the gradient
            return self._pll(x, ids, positions)
        return torch.cat([self._pll(x[c], ids[c], positions[c]) for c in self._chunks(x)])

    def _chunks(self, x: Tensor) -> tuple[Tensor, ...]:
        """Chain indices in chunks of at most ``chunk_size`` copies (at least one chain each)."""
        b, d, _ = x.shape
        chains = b if self.chunk_size is None else max(1, self.chunk_size // d)
        return torch.arange(b, device=x.device).split(chains)

    def _pll(self, x: Tensor, ids: Tensor, positions: Tensor) -> Tensor:
        """The energy of chains ``x (B, d, K)`` filling templates ``ids (B, L)`` at ``positions (B, d)``."""
        embeddings = self.model.get_input_embeddings().weight
        b, d, _ = x.shape
        rows = torch.arange(b, device=x.device)[:, None]
        filled = embeddings[ids]  # (B, L, H)
        filled[rows, positions] = x.to(embeddings.dtype) @ embeddings[self.category_ids]
        copies = filled.unsqueeze(1).expand(b, d, ids.shape[1], -1).clone()  # (B, d, L, H)
        copies[rows, torch.arange(d, device=x.device), positions] = embeddings[self.mask_token_id]
        logits = self._logits_at(positions.reshape(-1, 1), inputs_embeds=copies.flatten(0, 1)).reshape(b, d, -1)
        return (torch.log_softmax(logits.float(), dim=-1) * x).sum((1, 2))

    def value_and_grad(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Energies ``(B,)`` and gradients ``(B, d, K)``, chunked by ``chunk_size`` copies if set."""
        ids, positions = self._templates(x.shape[0])
        values, grads = [], []
        for chunk in self._chunks(x):
            with torch.enable_grad():
                x_chunk = x[chunk].detach().requires_grad_(True)
                value = self._pll(x_chunk, ids[chunk], positions[chunk])
                (grad,) = torch.autograd.grad(value.sum(), x_chunk)
            self.sequences += x_chunk.shape[0] * x_chunk.shape[1]  # the backward pass over the copies
            values.append(value.detach())
            grads.append(grad)
        return torch.cat(values), torch.cat(grads)

    @torch.inference_mode()
    def blank_logits(self, x_idx: Tensor, masked: Tensor, read: Optional[Tensor] = None) -> Tensor:
        """The model's logits (float32) in one forward pass over the ``B`` sequences in which blank ``j`` of
        chain ``b`` holds the mask token where ``masked[b, j]`` (bool ``(B, d)``) and category
        ``x_idx[b, j]`` elsewhere: at every blank ``(B, d, K)``, or only at the blanks ``read (B, S)`` of
        each chain ``(B, S, K)`` (the head runs only where it is read)."""
        ids, positions = self._templates(len(x_idx))
        rows = torch.arange(len(ids), device=ids.device)[:, None]
        ids[rows, positions] = torch.where(masked, self.mask_token_id, self.category_ids[x_idx])
        slots = positions if read is None else positions.gather(1, read)
        return self._logits_at(slots, input_ids=ids).float()

    def conditional_logits(self, x_idx: Tensor, i: Tensor) -> Tensor:
        """The model's own logits ``(B, K)`` at blank ``i[b]`` masked, the other blanks filled from ``x_idx``."""
        masked = torch.nn.functional.one_hot(i, self.num_blanks).bool()
        return self.blank_logits(x_idx, masked, read=i[:, None])[:, 0]
