"""ACLSum (PyPI ``aclsum``): documents = introduction + conclusion sentences, reference = the abstract.

The package's data files are read directly (importing ``aclsum`` needs ``sienna``, which is not
installed); its text is pre-tokenized (``"setup ( NER ) ."``) and is detokenized with nltk's Treebank
detokenizer (no download needed).
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import InfillError

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class AclsumDocument:
    id: str
    title: str
    sentences: list[str]
    reference: str


def data_dir() -> Path:
    """The ``dataset`` folder of the installed ``aclsum`` package."""
    spec = importlib.util.find_spec("aclsum")
    if spec is None or not spec.submodule_search_locations:
        raise InfillError("the aclsum data set is not installed: pip install aclsum==0.1.2")
    return Path(list(spec.submodule_search_locations)[0]) / "dataset"


def detokenize(text: str) -> str:
    """Undo the data set's tokenization (``"F 1 ( NER ) ."`` -> ``"F 1 (NER)."``)."""
    from nltk.tokenize.treebank import TreebankWordDetokenizer

    text = TreebankWordDetokenizer().detokenize(text.split())
    return re.sub(r"\s+", " ", text).strip()


def load_aclsum(split: str, limit: Optional[int] = None, directory: Optional[Path] = None) -> list[AclsumDocument]:
    """The documents of ``split`` (``train``, ``val`` or ``test``), the first ``limit`` of them."""
    if split not in SPLITS:
        raise InfillError(f"aclsum has splits {', '.join(SPLITS)}, not {split!r}")
    path = (directory or data_dir()) / f"{split}.jsonl"
    if not path.is_file():
        raise InfillError(f"cannot find the aclsum {split} split at {path}")
    documents = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            parts = row["sentences"]
            sentences = [detokenize(s) for s in parts.get("introduction", []) + parts.get("conclusion", [])]
            sentences = [s for s in sentences if s]
            reference = " ".join(detokenize(s) for s in parts.get("abstract", []))
            if sentences and reference:
                documents.append(AclsumDocument(str(row["id"]), row.get("title", ""), sentences, reference))
            if limit is not None and len(documents) >= limit:
                break
    return documents
