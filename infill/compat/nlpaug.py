"""nlpaug's ``ContextualWordEmbsAug`` on infill: ``import infill.compat.nlpaug as naw`` in place of
``import nlpaug.augmenter.word as naw``, and the augmenter's code runs unchanged.

What differs, on purpose: the words are filled jointly in one batched run (nlpaug fills them one at a time, one
sentence at a time); ``augment`` returns lists always (a string gives ``n`` variants, a list one list of ``n``
per sentence, in order), every variant distinct and differing from its sentence (fewer only where no more exist);
numbers, names, URLs, e-mails and ids stay as written; the same ``seed`` gives the same variants. ``action`` is
``substitute`` or ``insert``, as nlpaug's. ``top_k``, ``batch_size`` and nlpaug's logging and caching switches are taken
and have no effect: every draw is from the model's whole distribution, every sentence of a call in one batch.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

from ..errors import InfillError


class ContextualWordEmbsAug:
    """Substitute (or insert) a share ``aug_p`` of each sentence's words (at least ``aug_min``, at most ``aug_max``)
    by the masked LM at ``model_path``; ``stopwords`` and ``stopwords_regex`` are never changed."""

    def __init__(
        self,
        model_path: str = "bert-base-uncased",
        model_type: str = "",
        action: str = "substitute",
        top_k: int = 100,
        name: str = "ContextualWordEmbs_Aug",
        aug_min: int = 1,
        aug_max: Optional[int] = 10,
        aug_p: float = 0.3,
        stopwords: Optional[Sequence[str]] = None,
        batch_size: int = 32,
        device: str = "cpu",
        force_reload: bool = False,
        stopwords_regex: Optional[str] = None,
        verbose: int = 0,
        silence: bool = True,
        use_custom_api: bool = True,
        seed: int = 0,
    ):
        if action not in ("substitute", "insert"):
            raise InfillError(
                f"ContextualWordEmbsAug substitutes or inserts words; action={action!r} is not served "
                "(infill.augment(..., action='delete') deletes)"
            )
        from ..pipeline.augment_request import METHOD, check_request
        from ..pipeline.infiller import Infiller

        protect = [*(stopwords or ()), *([stopwords_regex] if stopwords_regex else [])]
        self.options = {"protect": protect, "min_words": aug_min, "max_words": aug_max, "action": action}
        check_request(1, aug_p, seed, aug_min, aug_max, METHOD, action)
        self.name, self.action, self.aug_p, self.seed = name, action, aug_p, seed
        self.infiller = Infiller(model_path, device=device)

    def augment(self, data: Union[str, Sequence[str]], n: int = 1, num_thread: int = 1) -> list:
        """``n`` variants of ``data`` (a string: a list of strings; a list: a list of lists, in order)."""
        found = self.infiller.augment(data, n, self.aug_p, self.seed, **self.options)
        if isinstance(data, str):
            return [v.text for v in found]
        return [[v.text for v in variants] for variants in found]
