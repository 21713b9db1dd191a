"""Joint fill-mask: ``infill.pipeline(model=...)`` for ``transformers.pipeline("fill-mask", model=...)``.

transformers' fill-mask pipeline predicts each mask on its own, one token per mask, from the text with every
other mask still masked. This pipeline takes the same inputs (a string or a list of strings, the model's own mask
token or ``[MASK]``, ``top_k``, by default 5) and returns the ``top_k`` best distinct JOINT fillings that
:meth:`~infill.pipeline.infiller.Infiller.sample_many` keeps with ``top=top_k`` (the ``auto`` method), each a
whole sentence in which every mask holds a token chosen with the others.

Output, per input, a list of at most ``top_k`` dicts, highest ``score`` first, with fill-mask's keys:

- one mask: ``{"score", "token", "token_str", "sequence"}`` as fill-mask, ``token`` the id and ``token_str``
  ``tokenizer.decode([token])``;
- several masks (fill-mask returns one list per mask): each dict is one joint filling, ``token`` and
  ``token_str`` a list with one item per mask, in the order of the text.

``sequence`` is the input, character for character, with each mask replaced by its fill (fill-mask decodes the
token ids instead, lowercased for an uncased model). A list of inputs gives a list of such lists, even of one
input (fill-mask returns a one-item list's output unwrapped).

``score`` is ``exp`` of the filling's energy as :class:`~infill.pipeline.results.Sample` reports it: the PLL,
the sum over the masks of ``log p(token | the text with the other masks filled)``, each conditional normalised
over the tokens a blank may take (word starts with a letter or digit unless ``allow_subwords`` /
``allow_punctuation``). For one mask it is fill-mask's probability renormalised over those tokens: at least
fill-mask's score, in the same order. For several masks it is a product of conditionals in (0, 1], not a joint
probability (the scores of all fillings need not sum to 1): it ranks the fillings of one input, nothing more. On
several masks ``auto`` scores by the repeat-masked PLL, equal to the PLL unless two masks hold the same token.

Importing this module registers the class with transformers as ``"joint-fill-mask"``, so that
``transformers.pipeline("joint-fill-mask", model=...)`` builds it too. Bad input raises
:class:`~infill.errors.InfillError` with one line.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Union

from transformers import AutoModelForMaskedLM, Pipeline
from transformers.pipelines import PIPELINE_REGISTRY

from ..errors import InfillError, check, positive_integer
from ..text.blanks import quote
from ..text.template import Template
from .infiller import Infiller
from .results import InfillResult

TASK = "joint-fill-mask"
TOP_K = 5  # fill-mask's default
INFILLER_KEYWORDS = ("device", "dtype", "tokenizer", "chunk_size", "cache_mib")


def pipeline(model=None, **kwargs) -> "JointFillMaskPipeline":
    """The joint fill-mask pipeline of ``model`` (a hub id, a local path, or a loaded masked LM with its
    ``tokenizer``: what :class:`~infill.pipeline.infiller.Infiller` takes, as are ``device``, ``dtype``,
    ``chunk_size`` and ``cache_mib``); the other keywords (``top_k``, ``seed``, any
    :class:`~infill.pipeline.config.RunConfig` option) are the defaults of every call."""
    infiller = Infiller(model, **{key: kwargs.pop(key) for key in INFILLER_KEYWORDS if key in kwargs})
    return JointFillMaskPipeline(infiller.model, infiller.tokenizer, infiller=infiller, **kwargs)


class JointFillMaskPipeline(Pipeline):
    """fill-mask's inputs, the best joint fillings out (see the module docstring). Its stages are fill-mask's:
    :meth:`preprocess` (parse, check), :meth:`_forward` (the sampling run of every input) and :meth:`postprocess`
    (the output dicts); ``__call__`` runs them itself, all inputs in one run, since the samplers take gradients
    and transformers' own loop runs the model under ``torch.inference_mode``."""

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def __init__(self, model, tokenizer=None, *, infiller: Optional[Infiller] = None, **kwargs):
        if tokenizer is None or tokenizer.mask_token is None:
            raise InfillError("the joint fill-mask pipeline needs a tokenizer with a mask token: use a masked LM")
        self.infiller = infiller
        kwargs.setdefault("task", TASK)
        if infiller is not None:
            kwargs["device"] = infiller.device
        super().__init__(model, tokenizer, **kwargs)
        if self.infiller is None:  # built by transformers.pipeline(TASK, ...)
            self.infiller = Infiller(self.model, device=self.device, tokenizer=self.tokenizer)

    def _sanitize_parameters(self, top_k: Optional[int] = None, seed: Optional[int] = None, **options):
        check("top" not in options, "the pipeline takes top_k, the number of fillings, not top")
        forward = dict(options)
        if top_k is not None:
            forward["top_k"] = positive_integer("top_k", top_k)
        if seed is not None:
            forward["seed"] = seed
        return {}, forward, {}

    def __call__(self, inputs: Union[str, Sequence[str]], **kwargs) -> list:
        """The joint fillings of ``inputs`` (one string, or a list of strings); ``top_k``, ``seed`` and
        :class:`~infill.pipeline.config.RunConfig` options override the pipeline's."""
        if isinstance(inputs, str):
            texts = [inputs]
        elif isinstance(inputs, (list, tuple)) and inputs:
            texts = list(inputs)
        else:
            raise InfillError(f"fill a string or a non-empty list of strings, got {inputs!r:.60}")
        forward = {**self._forward_params, **self._sanitize_parameters(**kwargs)[1]}
        prepared = [self.preprocess(text) for text in texts]
        outputs = [self.postprocess(p) for p in zip(prepared, self._forward(prepared, **forward))]
        return outputs[0] if isinstance(inputs, str) else outputs

    def preprocess(self, text: str) -> tuple[str, Template]:
        """``text`` with the model's mask token written ``[MASK]``, and its parsed template."""
        if not isinstance(text, str):
            raise InfillError(f"a text to fill must be a string, got {type(text).__name__}")
        check(bool(text.strip()), "a text to fill is empty: write one with a mask token, e.g. 'a [MASK] day.'")
        mask = self.tokenizer.mask_token
        written = text.replace(mask, "[MASK]")
        check("[MASK" in written.upper(), f"no mask token in {quote(text)}: write {mask} where a token goes")
        template = self.infiller.parse(written)
        check(
            template.fixed,
            f"{quote(text)} has a word span [MASK*M-N]: the pipeline fills mask tokens; use infill.Infiller().sample",
        )
        return written, template

    def _forward(
        self, prepared: list[tuple[str, Template]], top_k: int = TOP_K, seed: Optional[int] = None, **options
    ) -> list[InfillResult]:
        """The ``top_k`` best distinct joint fillings of every input, in one run."""
        return self.infiller.sample_many([written for written, _ in prepared], top=top_k, seed=seed, **options)

    def postprocess(self, item: tuple[tuple[str, Template], InfillResult]) -> list[dict]:
        """One input's fillings as fill-mask's dicts, highest score first."""
        (_, template), result = item
        positions = template.blank_positions.tolist()
        out = []
        for sample in sorted(result.samples, key=lambda s: -s.energy):
            ids = [sample.token_ids[p] for p in positions]
            words = [self.tokenizer.decode([i]) for i in ids]
            one = len(ids) == 1
            out.append(
                {
                    "score": math.exp(sample.energy),
                    "token": ids[0] if one else ids,
                    "token_str": words[0] if one else words,
                    "sequence": sample.text,
                }
            )
        return out


PIPELINE_REGISTRY.register_pipeline(
    TASK, pipeline_class=JointFillMaskPipeline, pt_model=AutoModelForMaskedLM, type="text"
)
