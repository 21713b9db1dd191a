"""Shared fixtures: tiny random BERTs built in-process, and the dev MLM from ../shared."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

# Tests run tiny batched ops, where intra-op threads only add synchronisation (and thrash on a busy machine);
# pytest-xdist runs one worker per core instead.
torch.set_num_threads(1)
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach a hub

DEV_MODEL = Path(__file__).resolve().parents[1].parent / "shared" / "models" / "infill-dev-minilm-mlm"


def tiny_bert(vocab_size: int = 30522, seed: int = 0, init: float = 0.02) -> BertForMaskedLM:
    """A 2-layer, 32-wide BERT with random weights (``init`` sets their scale)."""
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        initializer_range=init,
    )
    return BertForMaskedLM(config).eval()


def recording(adapted, values: list):
    """``adapted`` (a sampler in its adaptation) whose kernel appends its tuned value to ``values`` at each step."""
    from infill.samplers import Adapted, options_of

    class Recording(type(adapted.sampler)):
        def step(self, energy, state, generator):
            values.append(getattr(self, self.tuned))
            return super().step(energy, state, generator)

    return Adapted(Recording(**options_of(adapted.sampler)), adapted.adaptation)


def reading_only_masked_blanks(energy, monkeypatch) -> list:
    """Wrap ``energy.blank_logits`` to record, per call, whether every blank it read was masked."""
    calls, original = [], energy.blank_logits

    def blank_logits(x_idx, masked, read=None):
        calls.append(bool(masked.gather(1, read).all()) if read is not None else bool(masked.all()))
        return original(x_idx, masked, read)

    monkeypatch.setattr(energy, "blank_logits", blank_logits)
    return calls


@pytest.fixture(scope="session")
def dev_model_path() -> Path:
    if not DEV_MODEL.is_dir():
        pytest.skip(f"dev MLM not found at {DEV_MODEL}")
    return DEV_MODEL


@pytest.fixture(scope="session")
def bert_tokenizer(dev_model_path):
    """The bert-base-uncased WordPiece tokenizer (shipped with the dev MLM)."""
    return AutoTokenizer.from_pretrained(dev_model_path)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, bert_tokenizer) -> Path:
    """``tiny_bert()`` with the bert-base-uncased tokenizer saved as a checkpoint directory (max length 64),
    so ``Infiller(model=path)`` and ``infill sample --model path`` load it like a real model."""
    path = tmp_path_factory.mktemp("tiny-bert")
    tiny_bert().save_pretrained(path)
    bert_tokenizer.save_pretrained(path)
    return path
