"""The one line for a hub id that is not in the local cache suggests only what is not already done: setting
``HF_HUB_OFFLINE`` where it is not set, filling the cache where it is."""

import pytest

from infill.errors import InfillError
from infill.lm import hub

MISSING = "no-such-org/no-such-model"


def refusal(monkeypatch, offline: bool) -> str:
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", offline)
    monkeypatch.setattr(hub, "hub_reachable", lambda: False)
    with pytest.raises(InfillError) as error:
        hub.check_available(MISSING)
    return str(error.value)


def test_hf_hub_offline_set_is_not_suggested_again(monkeypatch):
    message = refusal(monkeypatch, offline=True)
    assert "HF_HUB_OFFLINE is set" in message and "HF_HUB_OFFLINE=1" not in message
    assert "path of a saved checkpoint" in message and "HF_HUB_OFFLINE unset" in message


def test_hf_hub_offline_unset_is_suggested(monkeypatch):
    message = refusal(monkeypatch, offline=False)
    assert "unreachable" in message and "set HF_HUB_OFFLINE=1 with the model in the cache" in message
    assert "path of a saved checkpoint" in message and "unset" not in message
