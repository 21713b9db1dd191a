"""Tiny random masked LMs of every supported family (hidden 32, 2 layers) with real tokenizer vocabularies:
WordPiece (bert-base-uncased, from the dev MLM), GPT-2 byte-level BPE and a SentencePiece Unigram model
(``../shared/tokenizers``)."""

from __future__ import annotations

import json
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import torch
import transformers as tf
from transformers import AddedToken

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
BPE = SHARED / "tokenizers" / "gpt2-bpe"
UNIGRAM = SHARED / "tokenizers" / "sentencepiece-unigram" / "test_model.model"
SIZE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


def _from_model_file(cls):
    """``cls`` loaded from a folder holding the Unigram model under the file name the class expects."""
    folder = tempfile.mkdtemp(prefix="infill-spm-")
    shutil.copy(UNIGRAM, Path(folder) / cls.vocab_files_names["vocab_file"])
    return cls.from_pretrained(folder)


def _albert_tokenizer():
    """ALBERT's tokenizer over the Unigram pieces, with ALBERT's own special tokens first (as its spiece.model)."""
    import sentencepiece

    model = sentencepiece.SentencePieceProcessor(model_file=str(UNIGRAM))
    special = [(token, 0.0) for token in ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")]
    pieces = [(model.id_to_piece(i), model.get_score(i)) for i in range(3, model.get_piece_size())]
    return tf.AlbertTokenizer(vocab=special + pieces)


@lru_cache(maxsize=None)
def tokenizer(style: str):
    if style == "wordpiece":
        return tf.AutoTokenizer.from_pretrained(SHARED / "models" / "infill-dev-minilm-mlm")
    if style in ("bpe", "bpe-lstrip"):  # RoBERTa's <mask> strips the space before it; also test one that does not
        specials = ["<s>", "<pad>", "</s>", "<unk>"]  # first, as in RoBERTa's vocabulary (<pad> indexes positions)
        vocab = {token: i for i, token in enumerate(specials + list(json.loads((BPE / "vocab.json").read_text())))}
        mask = AddedToken("<mask>", lstrip=style == "bpe-lstrip")
        merges = [tuple(line.split()) for line in (BPE / "merges.txt").read_text().splitlines()[1:] if line]
        return tf.RobertaTokenizer(vocab=vocab, merges=merges, mask_token=mask)
    if style == "albert":
        return _albert_tokenizer()
    return _from_model_file(getattr(tf, style))


# family -> (tokenizer style, config class, config arguments beyond SIZE)
FAMILIES = {
    "bert": ("wordpiece", tf.BertConfig, {}),
    "distilbert": ("wordpiece", tf.DistilBertConfig, dict(dim=32, n_layers=2, n_heads=2, hidden_dim=64)),
    "electra": ("wordpiece", tf.ElectraConfig, dict(embedding_size=16)),
    "mpnet": ("wordpiece", tf.MPNetConfig, {}),
    "roberta": ("bpe-lstrip", tf.RobertaConfig, {}),
    "modernbert": ("bpe", tf.ModernBertConfig, dict(global_attn_every_n_layers=2, local_attention=16)),
    "xlm-roberta": ("XLMRobertaTokenizer", tf.XLMRobertaConfig, {}),
    "camembert": ("CamembertTokenizer", tf.CamembertConfig, {}),
    "albert": ("albert", tf.AlbertConfig, dict(embedding_size=16)),
    "deberta-v3": ("DebertaV2Tokenizer", tf.DebertaV2Config, dict(legacy=False)),
}


@lru_cache(maxsize=None)
def build(family: str, seed: int = 0):
    """``(model, tokenizer)``: a tiny random masked LM of ``family`` (eval mode) and its tokenizer."""
    style, config_class, extra = FAMILIES[family]
    tok = tokenizer(style)
    ids = dict(
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id or tok.cls_token_id,
        eos_token_id=tok.eos_token_id or tok.sep_token_id,
    )
    if family == "modernbert":
        ids.update(cls_token_id=tok.cls_token_id, sep_token_id=tok.sep_token_id)
    config = config_class(vocab_size=len(tok), max_position_embeddings=80, **SIZE, **ids, **extra)
    torch.manual_seed(seed)
    return tf.AutoModelForMaskedLM.from_config(config).eval(), tok
