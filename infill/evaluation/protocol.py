"""Evaluation protocols: TOML files under ``eval/`` that fix corpora, sentence selection, masking and sampling.

Relative corpus paths are resolved against the directory of the protocol file (so a protocol works from
any working directory). Every key is checked: unknown keys and impossible values raise ``InfillError``.
"""

from __future__ import annotations

import hashlib
import math

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InfillError, check, is_integer
from ..onepass.methods import ONE_PASS
from ..pipeline.config import RunConfig

CONVENTIONS = ("wikitext103", "tbc", "plain")


@dataclass(frozen=True)
class CorpusSpec:
    """One corpus: a local text file (``path``) or a hub dataset (``dataset``), its convention and quota."""

    name: str
    sentences: int
    convention: str = "plain"
    path: Path | None = None
    dataset: str | None = None
    config: str | None = None
    split: str = "train"
    column: str = "text"


@dataclass(frozen=True)
class MaskSpec:
    """Mask ``fraction`` of the words (rounded, at least one) or exactly ``count`` words; with
    ``exclude_ends`` never the first or last word (the DISCS setting)."""

    fraction: float | None = None
    count: int | None = None
    exclude_ends: bool = False

    def num_masked(self, num_words: int) -> int:
        if self.count is not None:
            return self.count
        return max(1, math.floor(self.fraction * num_words + 0.5))

    def maskable(self, num_words: int) -> int:
        return num_words - 2 if self.exclude_ends else num_words


@dataclass(frozen=True)
class Protocol:
    """A parsed protocol file. ``budgets`` maps a row with an ``equal_sequences = "REF"`` option to ``REF``:
    per sentence, that row draws as many times as it takes to pass as many encoder sequences as the row
    ``REF`` did (see :mod:`.compute`)."""

    name: str
    path: Path
    sha256: str
    seed: int
    corpora: tuple[CorpusSpec, ...]
    min_words: int
    max_words: int
    lowercase: bool
    mask: MaskSpec
    samplers: tuple[str, ...]
    chains: int
    steps: int
    top: int
    defaults: dict = field(default_factory=dict)
    sampler_options: dict = field(default_factory=dict)
    budgets: dict = field(default_factory=dict)

    def run_config(self, row: str, seed: int | None = None) -> RunConfig:
        """The run of the report row ``row``: the protocol's chains, steps, top and [sampling] defaults,
        overridden by ``[sampling.options.ROW]`` (whose ``method`` defaults to the row's name before any
        ``@``). A row in :attr:`budgets` draws as many times as its budget needs instead of ``chains``; a one-pass
        row takes none of the shared settings it does not take (:attr:`~infill.onepass.methods.OnePass.untaken`),
        and a greedy row no ``top`` (one filling on several blank tokens; the report keeps the top distinct)."""
        shared = {"num_samples": self.chains, "steps": self.steps, "top": self.top, **self.defaults}
        options = {"method": row.partition("@")[0], **self.sampler_options.get(row, {})}
        one_pass = ONE_PASS.get(options["method"])
        untaken = () if one_pass is None else (*one_pass.untaken, *(("top",) if one_pass.greedy else ()))
        return RunConfig.create(seed=seed, **{**{k: v for k, v in shared.items() if k not in untaken}, **options})


_TOP_KEYS = {"name", "seed", "lowercase", "corpora", "selection", "mask", "sampling"}
_CORPUS_KEYS = {"name", "path", "dataset", "config", "split", "column", "convention", "sentences"}
_SELECTION_KEYS = {"min_words", "max_words"}
_MASK_KEYS = {"fraction", "count", "exclude_ends"}
_SAMPLING_KEYS = {"samplers", "chains", "steps", "top", "options", "init", "temperature", "decode"}


def _check_keys(table: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise InfillError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _typed(table: dict, key: str, kind: type | tuple, where: str, default=None, required=False):
    if key not in table:
        if required:
            raise InfillError(f"{where}: missing key {key!r}")
        return default
    value = table[key]
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InfillError(f"{where}: {key!r} must be {names}, not {value!r}")
    return value


def _positive(value: int, key: str, where: str) -> int:
    check(is_integer(value, 1), f"{where}: {key!r} must be at least 1, not {value}")
    return value


def _corpus(table, index: int, base: Path) -> CorpusSpec:
    where = f"corpora[{index}]"
    if not isinstance(table, dict):
        raise InfillError(f"{where} must be a table")
    _check_keys(table, _CORPUS_KEYS, where)
    name = _typed(table, "name", str, where, required=True)
    where = f"corpus {name!r}"
    path, dataset = table.get("path"), table.get("dataset")
    if (path is None) == (dataset is None):
        raise InfillError(f"{where}: give exactly one of 'path' (a local text file) or 'dataset' (a hub dataset)")
    convention = _typed(table, "convention", str, where, "plain")
    if convention not in CONVENTIONS:
        raise InfillError(f"{where}: convention must be one of {', '.join(CONVENTIONS)}, not {convention!r}")
    if path is not None:
        path = base / _typed(table, "path", str, where)
    return CorpusSpec(
        name=name,
        convention=convention,
        path=path,
        sentences=_positive(_typed(table, "sentences", int, where, required=True), "sentences", where),
        dataset=_typed(table, "dataset", str, where),
        config=_typed(table, "config", str, where),
        split=_typed(table, "split", str, where, "train"),
        column=_typed(table, "column", str, where, "text"),
    )


def _mask(table: dict) -> MaskSpec:
    _check_keys(table, _MASK_KEYS, "[mask]")
    fraction = _typed(table, "fraction", (float, int), "[mask]")
    count = _typed(table, "count", int, "[mask]")
    if (fraction is None) == (count is None):
        raise InfillError("[mask]: give exactly one of 'fraction' (of the words) or 'count' (words per sentence)")
    if fraction is not None and not 0 < fraction < 1:
        raise InfillError(f"[mask]: 'fraction' must be between 0 and 1, not {fraction}")
    if count is not None:
        _positive(count, "count", "[mask]")
    return MaskSpec(
        fraction=None if fraction is None else float(fraction),
        count=count,
        exclude_ends=_typed(table, "exclude_ends", bool, "[mask]", False),
    )


def _sampling(table: dict) -> dict:
    _check_keys(table, _SAMPLING_KEYS, "[sampling]")
    samplers = _typed(table, "samplers", list, "[sampling]", required=True)
    if not samplers or not all(isinstance(s, str) and s for s in samplers) or len(set(samplers)) < len(samplers):
        raise InfillError("[sampling]: 'samplers' must be a non-empty list of distinct sampler names")
    options = _typed(table, "options", dict, "[sampling]", {})
    for row, opts in options.items():
        if row not in samplers:
            raise InfillError(
                f"[sampling.options.{row}] configures {row!r}, which is not in [sampling] samplers "
                f"({', '.join(samplers)})"
            )
        if not isinstance(opts, dict):
            raise InfillError(f"[sampling.options]: {row!r} must be a table of options")
    budgets = {row: opts.pop("equal_sequences") for row, opts in options.items() if "equal_sequences" in opts}
    for row, reference in budgets.items():
        if reference not in samplers or reference in budgets:
            raise InfillError(
                f"[sampling.options.{row}]: 'equal_sequences' must name another row of [sampling] "
                f"samplers without a budget of its own, not {reference!r}"
            )
    values = {
        key: _positive(_typed(table, key, int, "[sampling]", required=True), key, "[sampling]")
        for key in ("chains", "steps", "top")
    }
    defaults = {key: table[key] for key in ("init", "temperature", "decode") if key in table}
    return {"samplers": tuple(samplers), "defaults": defaults, "sampler_options": options, "budgets": budgets, **values}


def _read(path: Path) -> tuple[bytes, dict]:
    """The file's bytes and its TOML table, whose top-level keys are known and tables present."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InfillError(f"cannot read protocol {path}: {exc.strerror}") from None
    try:
        table = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InfillError(f"protocol {path} is not valid TOML: {exc}") from None
    _check_keys(table, _TOP_KEYS, str(path))
    for key in ("selection", "mask", "sampling"):
        if not isinstance(table.get(key), dict):
            raise InfillError(f"{path}: missing table [{key}]")
    return raw, table


def _corpora(table: dict, path: Path) -> tuple[CorpusSpec, ...]:
    """The ``[[corpora]]`` entries, at least one and distinctly named, their paths relative to ``path``'s
    directory."""
    corpora = table.get("corpora")
    if not isinstance(corpora, list) or not corpora:
        raise InfillError(f"{path}: missing [[corpora]] entries")
    specs = tuple(_corpus(c, i, path.resolve().parent) for i, c in enumerate(corpora))
    if len({c.name for c in specs}) < len(specs):
        raise InfillError(f"{path}: corpus names must be distinct")
    return specs


def _selection(selection: dict) -> tuple[int, int]:
    """``(min_words, max_words)`` of ``[selection]``: at least 3 (the report counts 3-grams), in order."""
    _check_keys(selection, _SELECTION_KEYS, "[selection]")
    min_words = _positive(_typed(selection, "min_words", int, "[selection]", required=True), "min_words", "[selection]")
    max_words = _typed(selection, "max_words", int, "[selection]", required=True)
    if max_words < min_words:
        raise InfillError(f"[selection]: max_words ({max_words}) is below min_words ({min_words})")
    if min_words < 3:
        raise InfillError(f"[selection]: min_words must be at least 3 (the report counts 3-grams), got {min_words}")
    return min_words, max_words


def _check_masking(mask: MaskSpec, min_words: int, max_words: int) -> None:
    """Refuse a mask that leaves a selected sentence nothing masked, or nothing unmasked."""
    if any(
        mask.maskable(n) < 1 or mask.num_masked(n) > mask.maskable(n) or mask.num_masked(n) >= n
        for n in (min_words, max_words)
    ):
        raise InfillError(
            f"sentences of {min_words}-{max_words} words cannot have {mask.num_masked(min_words)} "
            f"word(s) masked{' other than the first and last' if mask.exclude_ends else ''} and "
            "some left unmasked; raise [selection] min_words or mask fewer"
        )


def load_protocol(path: str | Path) -> Protocol:
    """Parse and validate a protocol file."""
    path = Path(path)
    raw, table = _read(path)
    specs = _corpora(table, path)
    min_words, max_words = _selection(table["selection"])
    mask = _mask(table["mask"])
    _check_masking(mask, min_words, max_words)
    protocol = Protocol(
        name=_typed(table, "name", str, str(path), path.stem),
        path=path,
        sha256=hashlib.sha256(raw).hexdigest(),
        seed=_typed(table, "seed", int, str(path), 0),
        corpora=specs,
        min_words=min_words,
        max_words=max_words,
        lowercase=_typed(table, "lowercase", bool, str(path), True),
        mask=mask,
        **_sampling(table["sampling"]),
    )
    for row in protocol.samplers:
        try:
            protocol.run_config(row)
        except InfillError as exc:
            raise InfillError(f"{path}: [sampling] {row!r}: {exc}") from None
    return protocol
