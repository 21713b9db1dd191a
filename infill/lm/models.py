"""Loading a Hugging Face masked language model and its tokenizer (from where :mod:`.hub` says), with one-line
errors; the prediction head of each masked-LM family as one function of the base model's hidden states, and the
logits at the positions a caller reads (:func:`logits_at`: the encoder, then the head there only)."""

from __future__ import annotations

import math
import warnings
import weakref
from typing import Callable, Optional, Union

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from ..errors import InfillError
from . import default_model
from .hub import not_found, offline, source

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_dtype(dtype: Union[str, torch.dtype, None]) -> Union[torch.dtype, str]:
    """``None`` -> float32; a name from :data:`DTYPES`, ``"auto"`` (the checkpoint's), or a torch dtype."""
    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype) or dtype == "auto":
        return dtype
    if dtype not in DTYPES:
        raise InfillError(f"unknown dtype {dtype!r}; choose from {', '.join(DTYPES)}, auto")
    return DTYPES[dtype]


def chain_dtype(dtype: Union[str, torch.dtype, None], device: torch.device) -> torch.dtype:
    """The dtype a run's chains use (its reported energies are float32 whatever it is): as asked, or for
    ``"auto"`` bfloat16 where the device computes it natively (a CUDA GPU that supports it, a CPU with
    oneDNN's bfloat16 kernels) and float32 elsewhere, where bfloat16 is emulated and slower."""
    dtype = resolve_dtype(dtype)
    if dtype != "auto":
        return dtype
    return torch.bfloat16 if native_bfloat16(device) else torch.float32


def native_bfloat16(device: torch.device) -> bool:
    """Whether ``device`` computes bfloat16 natively (torch's own test for the GPU, oneDNN's for the CPU)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return device.type == "cpu" and torch.ops.mkldnn._is_mkldnn_bf16_supported()


def resolve_device(device: Union[str, torch.device]) -> torch.device:
    try:
        device = torch.device(device)
    except RuntimeError:
        raise InfillError(f"unknown device {device!r}; use cpu, cuda, cuda:1, mps...") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise InfillError(f"device {str(device)!r} is not available here (no CUDA); choose the device 'cpu'")
    return device


def _pretrained(auto, name: Optional[str], **kwargs):
    """``auto.from_pretrained`` of a hub id or local path, its errors in one line; SDPA attention dropped for
    an architecture without it. A hub id is taken from the local cache alone when the hub is off or
    unreachable (:func:`.hub.offline`); a path asks nothing of the hub."""
    name, path, local = source(name)
    reason = None if local else offline()
    try:
        return auto.from_pretrained(path, local_files_only=reason is not None, **kwargs)
    except OSError:
        raise not_found(name, local, reason) from None
    except ValueError as exc:
        if kwargs.get("attn_implementation") == "sdpa" and "sdpa" in str(exc).lower():
            return _pretrained(auto, name, **{k: v for k, v in kwargs.items() if k != "attn_implementation"})
        first = str(exc).strip().splitlines()[0].rstrip(" :") if str(exc).strip() else type(exc).__name__
        raise InfillError(f"cannot load {name!r} as a masked language model: {first}") from None


def load_tokenizer(name: Optional[str] = None):
    """The tokenizer of a hub id or local path, alone: what checking templates needs, before the model."""
    from transformers import AutoTokenizer

    name = name or default_model()
    tokenizer = _pretrained(AutoTokenizer, name)
    if tokenizer.mask_token_id is None:
        raise InfillError(f"model {name!r} has no mask token; use a masked language model")
    return tokenizer


def load_config(name: Optional[str] = None):
    """The model's configuration (its size limits), read without loading the weights."""
    from transformers import AutoConfig

    return _pretrained(AutoConfig, name)


def load(
    name: Optional[str] = None,
    device: Union[str, torch.device] = "cpu",
    dtype: Union[str, torch.dtype, None] = None,
    tokenizer=None,
):
    """``(model, tokenizer)`` for a hub id or local path (``tokenizer``: one already loaded by
    :func:`load_tokenizer`), the model in eval mode on ``device``, with SDPA attention where the
    architecture supports it. A hub id comes from the local cache alone when ``HF_HUB_OFFLINE`` is set or
    the hub is unreachable."""
    from transformers import AutoModelForMaskedLM
    from transformers.utils import logging

    device, dtype = resolve_device(device), resolve_dtype(dtype)
    name = name or default_model()
    tokenizer = tokenizer or load_tokenizer(name)
    bar = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()  # no "Loading weights" bar: ours is the only one on stderr
    try:
        model = _pretrained(AutoModelForMaskedLM, name, dtype=dtype, attn_implementation="sdpa")
    finally:
        if bar:
            logging.enable_progress_bar()
    return model.to(device).eval(), tokenizer


def max_length(tokenizer, model_config) -> int:
    """The longest sequence the model takes: the tokenizer's limit or the position embeddings', the smaller."""
    return min(tokenizer.model_max_length, getattr(model_config, "max_position_embeddings", math.inf))


def _linear(layer: nn.Linear) -> tuple[Tensor, Optional[Tensor]]:
    return layer.weight, layer.bias


def _output_layer(model: nn.Module) -> tuple[Tensor, Optional[Tensor]]:
    return _linear(model.get_output_embeddings())


def _lm_head(model: nn.Module, hidden: Tensor) -> Tensor:  # RoBERTa's and MPNet's, before its decoder
    head = model.lm_head
    return head.layer_norm(F.gelu(head.dense(hidden)))


def _deberta_transform(model: nn.Module, hidden: Tensor) -> Tensor:
    if model.legacy:
        return model.cls.predictions.transform(hidden)
    head = model.lm_predictions.lm_head
    return head.LayerNorm(head.transform_act_fn(head.dense(hidden)))


def _deberta_decoder(model: nn.Module) -> tuple[Tensor, Optional[Tensor]]:
    if model.legacy:
        return _linear(model.cls.predictions.decoder)
    return model.deberta.embeddings.word_embeddings.weight, model.lm_predictions.lm_head.bias


Transform = Callable[[nn.Module, Tensor], Tensor]
Decoder = Callable[[nn.Module], tuple[Tensor, Optional[Tensor]]]
# What each family's forward does after ``model.base_model``, in two parts: a transform of the hidden states
# (..., H) -> (..., E), then a linear decoder to the vocabulary, its ``(weight (V, E), bias (V,) or None)``.
HEADS: dict[str, tuple[Transform, Decoder]] = {
    "BertForMaskedLM": (lambda m, h: m.cls.predictions.transform(h), _output_layer),
    "RobertaForMaskedLM": (_lm_head, _output_layer),
    "XLMRobertaForMaskedLM": (_lm_head, _output_layer),
    "CamembertForMaskedLM": (_lm_head, _output_layer),
    "MPNetForMaskedLM": (_lm_head, _output_layer),
    "AlbertForMaskedLM": (
        lambda m, h: m.predictions.LayerNorm(m.predictions.activation(m.predictions.dense(h))),
        _output_layer,
    ),
    "DistilBertForMaskedLM": (lambda m, h: m.vocab_layer_norm(m.activation(m.vocab_transform(h))), _output_layer),
    "ElectraForMaskedLM": (lambda m, h: m.generator_predictions(h), _output_layer),
    "ModernBertForMaskedLM": (lambda m, h: m.head(h), _output_layer),
    "DebertaForMaskedLM": (_deberta_transform, _deberta_decoder),
    "DebertaV2ForMaskedLM": (_deberta_transform, _deberta_decoder),
}
_warned: set[str] = set()


def _head(model: nn.Module) -> Optional[tuple[Transform, Decoder]]:
    """The family's head from :data:`HEADS`, or None for an unknown one (warned once)."""
    name = type(model).__name__
    if name in HEADS:
        return HEADS[name]
    if name not in _warned:
        _warned.add(name)
        warnings.warn(f"{name} has no known prediction head; computing logits at every position (slower)", stacklevel=4)
    return None


def prediction_head(model: nn.Module) -> Optional[Callable[[Tensor], Tensor]]:
    """The model's prediction head as ``hidden (..., H) -> logits (..., V)`` on ``model.base_model``'s output,
    or None for an architecture not in :data:`HEADS` (the caller then runs the full model; warned once)."""
    head = _head(model)
    if head is None:
        return None
    transform, decoder = head
    return lambda hidden: F.linear(transform(model, hidden), *decoder(model))


def category_head(model: nn.Module, category_ids: Tensor) -> Optional[Callable[[Tensor], Tensor]]:
    """:func:`prediction_head` over the tokens ``category_ids (K,)`` only, ``hidden (..., H) -> logits (..., K)``:
    the transform, then the decoder's rows of those tokens, copied once and kept with the model for the next
    call that asks for the same tokens of the same decoder weights (:func:`_decoder_key`)."""
    head = _head(model)
    if head is None:
        return None
    transform, decoder = head
    weight, bias = decoder(model)
    key = _decoder_key(weight, bias, category_ids)
    kept = _CATEGORY_HEADS.get(model)
    if kept is None or kept[0] != key:
        rows = weight[category_ids], None if bias is None else bias[category_ids]
        kept = _CATEGORY_HEADS[model] = key, rows
    return lambda hidden: F.linear(transform(model, hidden), *kept[1])


def _decoder_key(weight: Tensor, bias: Optional[Tensor], category_ids: Tensor) -> tuple:
    """What a category head's rows are copied from: the decoder's tensors (their storage and in-place version,
    which an optimizer step bumps) and the tokens, as bytes."""
    state = [(t.data_ptr(), t._version) for t in (weight, bias) if t is not None]
    return *state, category_ids.to("cpu", torch.int64).numpy().tobytes()


_CATEGORY_HEADS: "weakref.WeakKeyDictionary[nn.Module, tuple]" = weakref.WeakKeyDictionary()
"""Each model's last category head: its :func:`_decoder_key` and the decoder's rows."""


def encode(model: nn.Module, min_rows: int = 1, **inputs: Tensor) -> Tensor:
    """``model.base_model``'s hidden states ``(N, L, H)`` of the sequences ``inputs`` (``input_ids (N, L)`` or
    ``inputs_embeds (N, L, E)``, an ``attention_mask`` where some are padded), in a pass of at least ``min_rows``
    token rows: fewer are repeated, as a product's last bits can depend on its shape (:mod:`.packed`)."""
    n, length = next(iter(inputs.values())).shape[:2]
    repeat = -(-min_rows // (n * length))
    if repeat == 1:
        return model.base_model(**inputs)[0]
    return model.base_model(**{k: v.repeat(repeat, *[1] * (v.dim() - 1)) for k, v in inputs.items()})[0][:n]


def logits_at(
    model: nn.Module,
    head: Optional[Callable[[Tensor], Tensor]],
    at: tuple[Tensor, ...],
    tokens: Optional[Tensor] = None,
    min_rows: int = 1,
    **inputs: Tensor,
) -> Tensor:
    """The logits at the positions ``at`` (an index of the sequences' ``(N, L)`` positions) of the sequences
    ``inputs``: the encoder (:func:`encode`, ``min_rows``), then ``head`` (:func:`prediction_head`, or
    :func:`category_head` over the tokens ``tokens``) at those positions only. A family whose head is not known
    (``head`` None) runs the full model, its logits read there (over ``tokens`` where given)."""
    if head is None:
        logits = model(**inputs).logits[at]
        return logits if tokens is None else logits[..., tokens]
    return head(encode(model, min_rows, **inputs)[at])
