"""Loading a Hugging Face masked language model and its tokenizer, with one-line errors, and the
prediction head of each masked-LM family as one function of the base model's hidden states."""
from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Callable, Optional, Union

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from ..errors import InfillError
from . import default_model

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


def _check_folder(path: Path, name: str) -> None:
    """One line for a local folder that holds no saved model (``save_pretrained``'s config and weights)."""
    files = [f.name for f in path.iterdir()]
    if "config.json" not in files:
        raise InfillError(f"folder {name!r} holds no model: it has no config.json; give the folder a model was "
                          "saved to, or a hub id")
    if not any(f.endswith((".safetensors", ".bin")) for f in files):
        raise InfillError(f"folder {name!r} has a config.json but no model weights (*.safetensors or *.bin)")


def _source(name: Optional[str]) -> tuple[str, str, bool]:
    """``(name, what from_pretrained takes, whether it is a local folder)``, the folder checked."""
    name = name or default_model()
    path = Path(name).expanduser()
    if name.startswith((".", "/", "~")) and not path.exists():
        raise InfillError(f"model path {name!r} does not exist; give the path of a local checkpoint or a hub id")
    local = path.is_dir()
    if local:
        _check_folder(path, name)
    return name, str(path) if local else name, local


def _unreachable(name: str, local: bool) -> InfillError:
    if local:
        return InfillError(f"cannot load the model saved in {name!r}: its tokenizer or weights are missing or "
                           "unreadable")
    return InfillError(f"cannot load model {name!r}: not found locally and the hub is unreachable; give the path "
                       "of a local checkpoint (or set INFILL_MODEL)")


def _not_masked_lm(name: str, exc: ValueError) -> InfillError:
    first = str(exc).strip().splitlines()[0].rstrip(" :") if str(exc).strip() else type(exc).__name__
    return InfillError(f"cannot load {name!r} as a masked language model: {first}")


def load_tokenizer(name: Optional[str] = None):
    """The tokenizer of a hub id or local path, alone: what checking templates needs, before the model."""
    from transformers import AutoTokenizer

    name, source, local = _source(name)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
    except OSError:
        raise _unreachable(name, local) from None
    except ValueError as exc:
        raise _not_masked_lm(name, exc) from None
    if tokenizer.mask_token_id is None:
        raise InfillError(f"model {name!r} has no mask token; use a masked language model")
    return tokenizer


def load_config(name: Optional[str] = None):
    """The model's configuration (its size limits), read without loading the weights."""
    from transformers import AutoConfig

    name, source, local = _source(name)
    try:
        return AutoConfig.from_pretrained(source)
    except OSError:
        raise _unreachable(name, local) from None


def load(name: Optional[str] = None, device: Union[str, torch.device] = "cpu",
         dtype: Union[str, torch.dtype, None] = None, tokenizer=None):
    """``(model, tokenizer)`` for a hub id or local path (``tokenizer``: one already loaded by
    :func:`load_tokenizer`), the model in eval mode on ``device``, with SDPA attention where the
    architecture supports it. ``HF_HUB_OFFLINE=1`` is honoured by transformers."""
    from transformers import AutoModelForMaskedLM
    from transformers.utils import logging

    device, dtype = resolve_device(device), resolve_dtype(dtype)
    tokenizer = tokenizer or load_tokenizer(name)
    name, source, local = _source(name)
    bar = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()  # no "Loading weights" bar: ours is the only one on stderr
    try:
        try:
            model = AutoModelForMaskedLM.from_pretrained(source, dtype=dtype, attn_implementation="sdpa")
        except ValueError as exc:
            if "sdpa" not in str(exc).lower():
                raise
            model = AutoModelForMaskedLM.from_pretrained(source, dtype=dtype)
    except OSError:
        raise _unreachable(name, local) from None
    except ValueError as exc:
        raise _not_masked_lm(name, exc) from None
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
    "AlbertForMaskedLM": (lambda m, h: m.predictions.LayerNorm(m.predictions.activation(m.predictions.dense(h))),
                          _output_layer),
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
        warnings.warn(f"{name} has no known prediction head; computing logits at every position (slower)",
                      stacklevel=4)
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
    the transform, then the decoder's rows of those tokens (copied once, here)."""
    head = _head(model)
    if head is None:
        return None
    transform, decoder = head
    weight, bias = decoder(model)
    weight, bias = weight[category_ids], None if bias is None else bias[category_ids]
    return lambda hidden: F.linear(transform(model, hidden), weight, bias)
