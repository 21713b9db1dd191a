"""Running (sentence, sampler) units: sample the chains, keep the best distinct fillings, store the unit.

The sampling itself is injected: ``sample_fn(template, config)`` (a :class:`~infill.pipeline.config.RunConfig`)
returns a ``Sampling``. ``infiller_sample_fn`` adapts ``infill.Infiller``; tests pass a fake.

A row with a budget (``Protocol.budgets``) runs after the row it matches: per sentence, it is given as its
budget the encoder sequences that row's unit spent (:func:`~.compute.matched`) and draws until they are spent.

Filled sentences are rebuilt from the fills in the corpus' whitespace tokenization (``Task.fill``), not
taken from the Infiller's detokenized text, whose clean-up drops the spaces before punctuation: so
fillings, originals and references are compared token for token.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, replace
from typing import Optional
from typing import Protocol as Interface

from ..errors import InfillError
from ..onepass.methods import CHAIN_SETTINGS, ONE_PASS
from ..pipeline.config import RunConfig
from ..pipeline.distributed import World
from ..pipeline.progress import progress as progress_bar
from ..pipeline.results import top_distinct
from .compute import matched
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


DIAGNOSTICS = (
    "energy_evaluations",
    "encoder_sequences",
    "forwards",
    "acceptance_rate",
    "mean_hops",
    "tuned",
    "candidates",
)


def unit_seed(protocol_seed: int, sentence_id: str) -> int:
    """The sampling seed of a sentence: the same for every sampler (common random numbers)."""
    return int.from_bytes(hashlib.sha256(f"{protocol_seed}:{sentence_id}".encode()).digest()[:4], "big")


def best_distinct(task: Task, draws: list[Draw], top: int) -> list[dict]:
    """The ``top`` distinct filled sentences (in the corpus' tokenization) of highest energy."""
    kept = top_distinct(draws, top, key=lambda d: task.fill(list(d.fills)), energy=lambda d: d.energy)
    return [{"text": task.fill(list(d.fills)), "fills": list(d.fills), "energy": float(d.energy)} for d in kept]


def run_unit(task: Task, row: str, protocol: Protocol, sample_fn: SampleFn, budget: Optional[int] = None) -> dict:
    """Sample one sentence as the report row ``row`` says (within ``budget`` encoder sequences for a row with
    a budget) and summarise it as a storable unit."""
    seed = unit_seed(protocol.seed, task.sentence_id)
    config = protocol.run_config(row, seed)
    unit = {"config": config_signature(config, protocol.budgets.get(row))}

    def timed(budget: Optional[int]) -> tuple[Sampling, float]:
        start = time.perf_counter()
        return sample_fn(task.template, replace(config, budget=budget)), time.perf_counter() - start

    if budget is None:
        result, seconds = timed(config.budget)
    else:
        (result, seconds), match = matched(
            timed, budget, config.method if config.is_baseline else config.init, len(task.masked), config.top or 1
        )
        unit.update({**match, "draws": len(result.draws)})
    fillings = best_distinct(task, result.draws, protocol.top)
    unit.update(
        {
            "sentence_id": task.sentence_id,
            "corpus": task.corpus,
            "sampler": row,
            "seed": seed,
            "original": task.text,
            "template": task.template,
            "masked": list(task.masked),
            "distinct": len({task.fill(list(d.fills)) for d in result.draws}),
            "fillings": fillings,
            "seconds": seconds,
        }
    )
    unit.update({key: result.diagnostics[key] for key in DIAGNOSTICS if key in result.diagnostics})
    return unit


def config_signature(config: RunConfig, equal_to: Optional[str] = None) -> dict:
    """A row's settings as stored with each unit and in the report, those its method takes (:func:`taken`; the
    seed varies per sentence; so does the number of draws of a row with the encoder sequences of row
    ``equal_to``)."""
    signature = taken({key: value for key, value in config.signature().items() if key != "seed"})
    if equal_to is not None:
        del signature["num_samples"]
        signature["equal_sequences"] = equal_to
    return signature


def taken(signature: dict) -> dict:
    """A row's settings ``signature`` less those its method does not take: a one-pass method
    (:data:`~infill.onepass.methods.ONE_PASS`) has no chain settings, and no options but the particles'. Units
    stored with them compare equal."""
    method = ONE_PASS.get(signature["method"])
    if method is None:
        return signature
    untaken = set(CHAIN_SETTINGS) | ({"options"} if method.kind != "particles" else set())
    return {key: value for key, value in signature.items() if key not in untaken}


def run_units(
    tasks: list[Task],
    samplers: list[str],
    protocol: Protocol,
    store: Optional[UnitStore],
    sample_fn: SampleFn,
    done: set,
    world: World = World(),
    progress: bool = True,
) -> None:
    """Run every (task, sampler) unit not in ``done``, dealt over the ranks of ``world`` in rounds, the rows
    with a budget after all others; rank 0 stores each round's units in ``store``. Progress shows on rank 0 when
    ``progress``: a bar on a terminal, else a line per unit with an estimate (:mod:`infill.pipeline.progress`)."""
    todo = [(task, sampler) for task in tasks for sampler in samplers if (task.sentence_id, sampler) not in done]
    total = len(tasks) * len(samplers)
    with progress_bar(total, "infill eval", "unit", total - len(todo), not (progress and world.is_main)) as bar:
        _run_rounds([key for key in todo if key[1] not in protocol.budgets], protocol, store, sample_fn, {}, world, bar)
        budgeted = [key for key in todo if key[1] in protocol.budgets]
        if budgeted:
            budgets, error = world.broadcast(_budgets(store, budgeted, protocol) if world.is_main else None)
            if error:
                raise InfillError(error)
            _run_rounds(budgeted, protocol, store, sample_fn, budgets, world, bar)


def _budgets(store: UnitStore, keys: list[tuple[Task, str]], protocol: Protocol) -> tuple[dict, Optional[str]]:
    """The encoder sequences each (task, row) may use: those of the stored unit of the row it matches; or
    the error, if that unit does not count them."""
    budgets = {}
    for task, row in keys:
        reference = protocol.budgets[row]
        budgets[task.sentence_id, row] = store.units[task.sentence_id, reference].get("encoder_sequences")
        if budgets[task.sentence_id, row] is None:
            return {}, (
                f"{store.directory}: the {reference} unit of {task.sentence_id} does not count its encoder "
                f"sequences (sampled by an older infill), which {row} needs; use another --out"
            )
    return budgets, None


def _run_rounds(
    todo: list[tuple[Task, str]],
    protocol: Protocol,
    store: Optional[UnitStore],
    sample_fn: SampleFn,
    budgets: dict,
    world: World,
    bar,
) -> None:
    for start in range(0, len(todo), world.size):
        mine = todo[start + world.rank] if start + world.rank < len(todo) else None
        unit = None
        if mine is not None:
            bar.set_postfix_str(f"{mine[0].sentence_id} {mine[1]}")
            unit = run_unit(*mine, protocol, sample_fn, budgets.get((mine[0].sentence_id, mine[1])))
        finished = world.gather(unit)
        if world.is_main:
            for unit in filter(None, finished):
                store.add(unit)
            bar.update(len(todo[start : start + world.size]))


def infiller_sample_fn(infiller) -> SampleFn:
    """A ``SampleFn`` over an ``infill.Infiller``: the run's ``top`` fillings are the draws."""

    def sample(template: str, config: RunConfig) -> Sampling:
        (result,) = infiller.run([template], config)
        d = result.diagnostics
        return Sampling(
            draws=[Draw(fills=list(s.fills), energy=float(s.energy)) for s in result.samples],
            diagnostics={
                "energy_evaluations": d.evaluations * d.num_samples,
                "encoder_sequences": d.encoder_sequences,
                "forwards": d.forwards,
                "acceptance_rate": d.acceptance_rate,
                "mean_hops": d.mean_hops,
                "tuned": d.tuned,
                "candidates": d.candidates,
            },
        )

    return sample
