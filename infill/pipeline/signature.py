"""A run signature: everything that produced a reported number, printed on one line (as sacrebleu does).

``str(signature)`` is ``key:value`` pairs joined by ``|``, in a fixed order: protocol settings, then the
model, method, hyperparameters, seed and library versions. ``as_dict()`` is the same for a JSON report.
"""

from __future__ import annotations

import importlib.metadata
import platform
from dataclasses import dataclass, field
from typing import Any, Optional


def library_versions(packages: tuple[str, ...]) -> dict[str, str]:
    """Python's and each package's installed version (``"not installed"`` when missing)."""
    versions = {"python": platform.python_version()}
    for package in packages:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={_value(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "+".join(_value(v) for v in value)
    return str(value)


@dataclass(frozen=True)
class RunSignature:
    """The settings of one evaluated method: ``protocol`` (data, split, size, budget, metric options),
    ``model`` (None when there is none), ``method`` and its ``hyperparameters``, ``seed``, ``versions``."""

    protocol: dict
    method: str
    hyperparameters: dict = field(default_factory=dict)
    seed: Optional[int] = None
    model: Optional[str] = None
    versions: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "protocol": dict(self.protocol),
            "model": self.model,
            "method": self.method,
            "hyperparameters": dict(self.hyperparameters),
            "seed": self.seed,
            "versions": dict(self.versions),
        }

    def __str__(self) -> str:
        parts = [f"{k}:{_value(v)}" for k, v in self.protocol.items()]
        if self.model is not None:
            parts.append(f"model:{self.model}")
        parts.append(f"method:{self.method}")
        parts += [f"{k}:{_value(v)}" for k, v in self.hyperparameters.items()]
        if self.seed is not None:
            parts.append(f"seed:{self.seed}")
        parts += [f"{k}:{v}" for k, v in self.versions.items()]
        return "|".join(parts)
