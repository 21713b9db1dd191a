"""A Hugging Face sequence classifier as augment's classifier term reads one: a callable of texts to their label
probabilities (:mod:`infill.augmentation.terms`)."""

from __future__ import annotations

import torch

from ..augmentation.terms import Classifier


def hub_classifier(name: str, device: str = "cpu") -> Classifier:
    """A Hugging Face sequence classifier (hub id or path) as a callable of texts, its ``labels`` the names of
    its classes in order."""
    import transformers

    from .hub import check_available

    check_available(name)
    tokenizer = transformers.AutoTokenizer.from_pretrained(name)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(name).to(device).eval()

    @torch.inference_mode()
    def classify(texts: list[str]):
        batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt").to(device)
        return torch.softmax(model(**batch).logits.float(), -1).cpu()

    classify.labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    return classify
