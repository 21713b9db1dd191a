"""Where a model comes from: a saved folder, or a hub id taken from the hub or, when the hub is off or
unreachable, from the local cache alone. Nothing here imports torch, so a model that cannot be had is told
in one line at once."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Optional

from ..errors import InfillError
from . import default_model

HUB_TIMEOUT = 2.0
"""Seconds the hub has to answer the one reachability check before a hub id is looked for in the cache alone."""


def _check_folder(path: Path, name: str) -> None:
    """One line for a local folder that holds no saved model (``save_pretrained``'s config and weights)."""
    files = [f.name for f in path.iterdir()]
    if "config.json" not in files:
        raise InfillError(
            f"folder {name!r} holds no model: it has no config.json; give the folder a model was saved to, or a hub id"
        )
    if not any(f.endswith((".safetensors", ".bin")) for f in files):
        raise InfillError(f"folder {name!r} has a config.json but no model weights (*.safetensors or *.bin)")


def source(name: Optional[str]) -> tuple[str, str, bool]:
    """``(name, what from_pretrained takes, whether it is a local folder)``, the folder or the hub id checked."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    name = name or default_model()
    path = Path(name).expanduser()
    if name.startswith((".", "/", "~")) and not path.exists():
        raise InfillError(f"model path {name!r} does not exist; give the path of a local checkpoint or a hub id")
    local = path.is_dir()
    if local:
        _check_folder(path, name)
    else:
        try:
            validate_repo_id(name)
        except HFValidationError:
            raise InfillError(
                f"model {name!r} is no local folder and no hub id (such as 'bert-base-uncased' or "
                "'org/name'); give the path of a local checkpoint or a hub id"
            ) from None
    return name, str(path) if local else name, local


@functools.lru_cache(maxsize=None)
def hub_reachable() -> bool:
    """Whether the hub (``HF_ENDPOINT``, through any configured proxy) answers a HEAD request within
    :data:`HUB_TIMEOUT` seconds; asked once per process."""
    from huggingface_hub import constants, get_session

    try:
        get_session().head(constants.ENDPOINT, timeout=HUB_TIMEOUT)
    except Exception:  # the HTTP client's own errors: no route, refused, timed out, a proxy's refusal
        return False
    return True


def offline() -> Optional[str]:
    """Why a hub id is looked for in the local cache alone (no request, so no retries), or None when the hub
    answers."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    return None if hub_reachable() else f"the hub ({constants.ENDPOINT}) is unreachable"


def not_found(name: str, local: bool, reason: Optional[str]) -> InfillError:
    """The one line for a model that cannot be loaded; ``reason``: why only the cache was looked in."""
    if local:
        return InfillError(
            f"cannot load the model saved in {name!r}: its tokenizer or weights are missing or unreadable"
        )
    if reason:
        return InfillError(f"cannot load model {name!r}: it is not in the local cache and {reason}; {offline_hint()}")
    return InfillError(
        f"cannot load model {name!r}: no such model on the hub nor in the local cache; give a hub id "
        "or the path of a saved checkpoint"
    )


def offline_hint() -> str:
    """How to run offline, less what is already done: with ``HF_HUB_OFFLINE`` set, the cache is to be filled once
    while the hub answers, instead of setting it."""
    from huggingface_hub import constants

    cache = (
        "fetch the model into the cache once with the hub reachable and HF_HUB_OFFLINE unset"
        if constants.HF_HUB_OFFLINE
        else "set HF_HUB_OFFLINE=1 with the model in the cache"
    )
    return f"to run offline, give --model the path of a saved checkpoint (or set INFILL_MODEL to it), or {cache}"


def check_available(name: Optional[str]) -> None:
    """One line, before torch loads, for a hub id that is not in the local cache while the hub is off or
    unreachable; a saved folder is only checked to hold a model."""
    from huggingface_hub import try_to_load_from_cache

    name, _, local = source(name)
    reason = None if local else offline()
    if reason and not isinstance(try_to_load_from_cache(name, "config.json"), str):
        raise not_found(name, local, reason)
