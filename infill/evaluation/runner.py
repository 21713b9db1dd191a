"""Running (sentence, sampler) units: sample the chains, keep the best distinct fillings, store the unit.

The sampling itself is injected: ``sample_fn(template, config)`` (a :class:`~infill.config.RunConfig`)
returns a ``Sampling``. ``infiller_sample_fn`` adapts ``infill.Infiller``; tests pass a fake.

Filled sentences are rebuilt from the fills in the corpus' whitespace tokenization (``Task.fill``), not
taken from the Infiller's detokenized text, whose clean-up drops the spaces before punctuation: so
fillings, originals and references are compared token for token.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Optional, Protocol as Interface

from tqdm.auto import tqdm

from ..config import RunConfig
from ..results import top_distinct
from .distributed import World
from .protocol import Protocol
from .store import UnitStore
from .tasks import Task


@dataclass(frozen=True)
class Draw:
    """One filling the run kept: one string per blank, and its energy ``U`` (the pseudo-log-likelihood,
    higher is more probable, as in the DLP paper)."""
    fills: list[str]
    energy: float


@dataclass(frozen=True)
class Sampling:
    draws: list[Draw]
    diagnostics: dict = field(default_factory=dict)


class SampleFn(Interface):
    def __call__(self, template: str, config: RunConfig) -> Sampling: ...


DIAGNOSTICS = ("energy_evaluations", "forwards", "acceptance_rate", "mean_hops", "tuned", "candidates")


def unit_seed(protocol_seed: int, sentence_id: str) -> int:
    """The sampling seed of a sentence: the same for every sampler (common random numbers)."""
    return int.from_bytes(hashlib.sha256(f"{protocol_seed}:{sentence_id}".encode()).digest()[:4], "big")


def best_distinct(task: Task, draws: list[Draw], top: int) -> list[dict]:
    """The ``top`` distinct filled sentences (in the corpus' tokenization) of highest energy."""
    kept = top_distinct(draws, top, key=lambda d: task.fill(list(d.fills)), energy=lambda d: d.energy)
    return [{"text": task.fill(list(d.fills)), "fills": list(d.fills), "energy": float(d.energy)} for d in kept]


def run_unit(task: Task, row: str, protocol: Protocol, sample_fn: SampleFn) -> dict:
    """Sample one sentence as the report row ``row`` says and summarise it as a storable unit."""
    seed = unit_seed(protocol.seed, task.sentence_id)
    config = protocol.run_config(row, seed)
    start = time.perf_counter()
    result = sample_fn(task.template, config)
    seconds = time.perf_counter() - start
    fillings = best_distinct(task, result.draws, protocol.top)
    unit = {"sentence_id": task.sentence_id, "corpus": task.corpus, "sampler": row, "seed": seed,
            "original": task.text, "template": task.template, "masked": list(task.masked),
            "distinct": len({task.fill(list(d.fills)) for d in result.draws}),
            "fillings": fillings, "seconds": seconds, "config": config_signature(config)}
    unit.update({key: result.diagnostics[key] for key in DIAGNOSTICS if key in result.diagnostics})
    return unit


def config_signature(config: RunConfig) -> dict:
    """A row's settings as stored with each unit and in the report (the seed varies per sentence)."""
    return {key: value for key, value in config.signature().items() if key != "seed"}


def run_units(tasks: list[Task], samplers: list[str], protocol: Protocol, store: Optional[UnitStore],
              sample_fn: SampleFn, done: set, world: World = World(), progress: bool = True) -> list[dict]:
    """Run every (task, sampler) unit not in ``done``, dealt over the ranks of ``world`` in rounds; rank 0
    stores each round's units in ``store`` and returns the units of ``tasks`` x ``samplers`` (others: [])."""
    keys = [(task, sampler) for task in tasks for sampler in samplers]
    todo = [(task, sampler) for task, sampler in keys if (task.sentence_id, sampler) not in done]
    with tqdm(total=len(keys), initial=len(keys) - len(todo), disable=not (progress and world.is_main),
              unit="unit", desc="infill eval") as bar:
        for start in range(0, len(todo), world.size):
            mine = todo[start + world.rank] if start + world.rank < len(todo) else None
            if mine is not None:
                bar.set_postfix_str(f"{mine[0].sentence_id} {mine[1]}")
            finished = world.gather(None if mine is None else run_unit(*mine, protocol, sample_fn))
            if world.is_main:
                for unit in filter(None, finished):
                    store.add(unit)
                bar.update(len(todo[start:start + world.size]))
    return [store.units[(task.sentence_id, sampler)] for task, sampler in keys] if world.is_main else []


def infiller_sample_fn(infiller) -> SampleFn:
    """A ``SampleFn`` over an ``infill.Infiller``: the run's ``top`` fillings are the draws."""

    def sample(template: str, config: RunConfig) -> Sampling:
        (result,) = infiller.run([template], config)
        d = result.diagnostics
        return Sampling(
            draws=[Draw(fills=list(s.fills), energy=float(s.energy)) for s in result.samples],
            diagnostics={"energy_evaluations": d.evaluations * config.num_samples, "forwards": d.forwards,
                         "acceptance_rate": d.acceptance_rate, "mean_hops": d.mean_hops, "tuned": d.tuned,
                         "candidates": d.candidates})

    return sample
