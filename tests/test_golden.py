"""Golden test: 33 cases x 3 seeds through the public API give the recorded fillings and energies.

The first 20 cases were recorded BEFORE the refactor into subpackages (modules moved into subpackages, the
fixed-blank and span-blank pipelines unified), from the tree of commit 54d2c27, so that the refactor can show
it changed nothing a user sees; the promises work added the default's cases (``auto``: one to eight blanks, include
words, a budget, a batch) and made a batch give each template what a single call gives (re-recorded then:
every single-call case unchanged, the batched one now equal to its single calls); the perfect-cache work made a one-pass
method with a budget draw until the budget is spent (re-recorded then: only the cases of one-pass draws with a
budget changed, spending more of it); the particles study made ``auto`` above 4 blank tokens with ``top`` run particles
(``smc``), which beat the one-pass draws on the check half (re-recorded then: only ``auto-6blanks``,
``auto-8blanks`` and ``auto-batch-3``, whose 6-blank template is ``auto-6blanks``'s); the one-pass fills
then stopped reading filled blanks (re-recorded: only ``fixed-mlm-independence-4blanks``' seed 1, its fillings
unchanged, its encoder sequences 73 where 77 were); the reader study made ``auto`` run the repeat-masked target on
more than one blank token and the product search with ``top`` up to 4 (re-recorded then: only the ``auto`` cases
of more than one blank token, and the new cases of the target, the search and ``auto`` without ``top``); ``auto``
with ``top`` then followed one rule (the search while its first product fits, particles above, kept at a share of
the range of the best candidates that repeat no content word: re-recorded then: only ``auto-4blanks``, ``auto-6blanks``, ``auto-8blanks``,
``auto-budget-3blanks`` and ``auto-batch-3``, the cases of ``top`` on more than two blank tokens); the product search
then ended once a round left its best fillings as they were (re-recorded: only the encoder sequences of
``auto-2blanks``, ``auto-batch-3`` and ``product-search-3blanks``, every filling and energy unchanged); the rule was
then chosen again on a larger grid (the search at 2 blank tokens, particles at tilt 1.5 from 3, kept at a share a
pair of blank tokens among every particle: re-recorded then: only ``auto-4blanks``, ``auto-6blanks``,
``auto-8blanks``, ``auto-budget-3blanks`` and ``auto-batch-3``); ``auto``'s particles then stopped drawing rounds
of fewer particles than ``top`` below the whole range (re-recorded: the same five cases, the particles' cases).
The product search then refused ``num_samples``, which it never read: ``product-search-3blanks`` names None (its
recorded definition edited, its results as they were).
``tests/golden/fillings.json`` holds, per case and seed, every returned sample's ``text`` and
``fills`` (compared exactly), its ``energy`` and ``terms`` (within 1e-4 absolute), and the run's
``diagnostics.encoder_sequences`` (exactly).

Every case names all its settings (sampler, num_samples, steps, init, top, decode, temperature, the
blank and vocabulary settings, the sampler's hyperparameters; None where the method takes none), so a later change of a library default
does not change what a case runs; the settings are recorded beside the results and checked against the
code, so an edited case that was not re-recorded fails by name.

Re-record ONLY when the behaviour is meant to change (a new sampler step, a fixed bug, a new default
that a case cannot name), and say why in the commit that carries the new recording::

    python tests/test_golden.py --record

A refactor must pass this file unchanged: ``python -m pytest -q -n 0 tests/test_golden.py``. Both the
recorder and pytest (``tests/conftest.py``) run torch on one thread.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

DEV_MODEL = Path(__file__).resolve().parents[1].parent / "shared" / "models" / "infill-dev-minilm-mlm"
GOLDEN = Path(__file__).resolve().parent / "golden" / "fillings.json"
SEEDS = (0, 1, 2)
ABS_TOLERANCE = 1e-4

# Settings every case names (a template with word blanks overrides the temperature: 0.5).
TOKEN = {
    "num_samples": 4,
    "steps": 3,
    "temperature": 1.0,
    "blank_unit": "token",
    "allow_subwords": False,
    "allow_punctuation": False,
    "forbid": [],
    "include": [],
    "anneal_from": None,
}
SPAN = {**TOKEN, "num_samples": 3, "temperature": 0.5}
# Each sampler's hyperparameters, as its defaults were when recorded.
GIBBS = {"sampler": "gibbs", "proposal": "model"}
GIBBS_MH = {"sampler": "gibbs-mh", "proposal": "model"}
GWG = {"sampler": "gwg", "path_length": 1.0, "balancing": "sqrt", "adapt_steps": 0, "target_accept": 0.574}
DMALA = {"sampler": "dmala", "step_size": 0.1, "preconditioner": None, "adapt_steps": None, "target_accept": 0.574}
BLOCK_MH = {"sampler": "block-mh", "block_size": 2, "order": "left-to-right"}
MLM_INDEPENDENCE = {"sampler": "mlm-independence", "independence": 0.5, "order": "confident-first"}
# The default: auto chooses its run, chains, steps, decoding and budget by the blanks and the terms.
AUTO = {
    **TOKEN,
    "sampler": "auto",
    "num_samples": None,
    "steps": None,
    "init": None,
    "top": 5,
    "decode": None,
    "budget": None,
}
# A one-pass method takes no chain settings (steps, init, anneal_from).
ONE_PASS = {**TOKEN, "steps": None, "init": None}

# id -> (call, input, settings). call: "sample" (input a template), "sample_many" (a list of templates),
# "rewrite" (a sentence; ``init`` is the source there, so rewrite cases name none).
CASES: dict[str, tuple[str, object, dict]] = {
    # --- fixed token blanks
    "fixed-gibbs-1blank": (
        "sample",
        "The studio reluctantly agreed and showed the [MASK] to a young audience .",
        {**TOKEN, **GIBBS, "init": "left-to-right", "top": 5, "decode": "visited"},
    ),
    "fixed-gibbs-mh-mask2": (
        "sample",
        "she 'd never had a [MASK*2] before .",
        {**TOKEN, **GIBBS_MH, "init": "independent", "top": 5, "decode": "visited"},
    ),
    "fixed-gibbs-mh-tempered": (
        "sample",
        "It governs the 71 public [MASK] schools , 32 public [MASK] schools .",
        {**TOKEN, **GIBBS_MH, "temperature": 0.7, "init": "random-order", "top": 4, "decode": "visited"},
    ),
    "fixed-gwg-all-chains": (
        "sample",
        "Flint praised the [MASK] of the [MASK] poets .",
        {**TOKEN, **GWG, "init": "left-to-right", "top": None, "decode": "visited"},
    ),
    "fixed-dmala-3blanks": (
        "sample",
        "The ship was [MASK] at 16 [MASK] in [MASK] .",
        {**TOKEN, **DMALA, "init": "confident-first", "top": 5, "decode": "visited"},
    ),
    "fixed-block-mh-6blanks-final": (
        "sample",
        "[MASK] leaned out , peering at [MASK*2] [MASK*3] .",
        {**TOKEN, **BLOCK_MH, "num_samples": 3, "init": "left-to-right", "top": 3, "decode": "final"},
    ),
    "fixed-mlm-independence-4blanks": (
        "sample",
        "he felt [MASK*2] inside his [MASK*2] .",
        {**TOKEN, **MLM_INDEPENDENCE, "init": "uniform", "top": 5, "decode": "visited"},
    ),
    "onepass-confident-first": (
        "sample",
        "deep within the landing bay , the [MASK*2] had had enough .",
        {**ONE_PASS, "sampler": "confident-first", "top": 5, "decode": "visited"},
    ),
    "onepass-left-to-right": (
        "sample",
        "Nero 's consolidation of [MASK] also included a slow [MASK] of authority from the Senate .",
        {**ONE_PASS, "sampler": "left-to-right", "top": None, "decode": "visited"},
    ),
    # --- word blanks (spans)
    "span-rjmcmc-any": (
        "sample",
        "mom would be [MASK*?] to see him .",
        {**SPAN, "sampler": "auto", "span_method": "rjmcmc", "init": "left-to-right", "top": 5, "decode": "visited"},
    ),
    "span-rjmcmc-range-all-chains": (
        "sample",
        "The weakness of the [MASK*1-3] was obvious .",
        {**SPAN, "sampler": "auto", "span_method": "rjmcmc", "init": "left-to-right", "top": None, "decode": "visited"},
    ),
    "span-per-length": (
        "sample",
        "two thoughts came [MASK*1-2] , one by one .",
        {
            **SPAN,
            "sampler": "auto",
            "span_method": "per-length",
            "init": "left-to-right",
            "top": 5,
            "decode": "visited",
        },
    ),
    "span-word-unit": (
        "sample",
        "Mendes gave Janney a book of [MASK] by Munch .",
        {
            **SPAN,
            "sampler": "auto",
            "blank_unit": "word",
            "span_method": "rjmcmc",
            "init": "left-to-right",
            "top": 5,
            "decode": "visited",
        },
    ),
    "span-two-blanks-final": (
        "sample",
        "i want to [MASK*1-2] up that [MASK*?] .",
        {**SPAN, "sampler": "auto", "span_method": "rjmcmc", "init": "independent", "top": 3, "decode": "final"},
    ),
    # --- include
    "include-fixed-gibbs-mh": (
        "sample",
        "she walked into the [MASK] and sat down next to the [MASK] .",
        {**TOKEN, **GIBBS_MH, "include": ["window"], "init": "left-to-right", "top": 5, "decode": "visited"},
    ),
    "include-fixed-gwg": (
        "sample",
        "The [MASK] [MASK] was valued at 16 million .",
        {**TOKEN, **GWG, "include": ["old"], "init": "left-to-right", "top": 5, "decode": "visited"},
    ),
    "include-span": (
        "sample",
        "harley laid me on the [MASK*1-3] .",
        {
            **SPAN,
            "sampler": "auto",
            "include": ["wooden"],
            "span_method": "rjmcmc",
            "init": "left-to-right",
            "top": 5,
            "decode": "visited",
        },
    ),
    # --- rewrite
    "rewrite-gibbs-mh": (
        "rewrite",
        "Their scenes show vulnerability .",
        {**TOKEN, **GIBBS_MH, "change": 0.5, "top": 5, "decode": "visited"},
    ),
    "rewrite-gibbs-final": (
        "rewrite",
        "i want to talk to them .",
        {**TOKEN, **GIBBS, "change": 0.5, "top": 3, "decode": "final"},
    ),
    # --- two templates of one shape in one call: each as a single call gives it
    "batched-sample-many": (
        "sample_many",
        [
            "the others wanted to [MASK] him and [MASK] him free .",
            "the cats wanted to [MASK] him and [MASK] him home .",
        ],
        {**TOKEN, **GIBBS, "init": "left-to-right", "top": 5, "decode": "visited"},
    ),
    # --- the default, auto
    "auto-1blank-exact": ("sample", "The studio reluctantly agreed and showed the [MASK] to a young audience .", AUTO),
    "auto-2blanks": (
        "sample",
        "i pinched her and [MASK] laughed as she pressed [MASK] face into my collarbone .",
        AUTO,
    ),
    "auto-4blanks": (
        "sample",
        "i got dressed [MASK] , trying [MASK] make the time [MASK] longer before id [MASK] to leave .",
        AUTO,
    ),
    "auto-6blanks": (
        "sample",
        "[MASK] [MASK] [MASK] [MASK] hostilities , [MASK] squadron [MASK] disbanded in march 1946 .",
        AUTO,
    ),
    "auto-8blanks": (
        "sample",
        "[MASK] film [MASK] [MASK] [MASK] [MASK] [MASK] , [MASK] with the [MASK] caveat .",
        AUTO,
    ),
    "auto-include-2blanks": (
        "sample",
        "she walked into the [MASK] and sat down next to the [MASK] .",
        {**AUTO, "include": ["window"]},
    ),
    "auto-include-6blanks": (
        "sample",
        "[MASK] [MASK] [MASK] [MASK] hostilities , [MASK] squadron [MASK] disbanded in march 1946 .",
        {**AUTO, "include": ["war"]},
    ),
    "auto-budget-3blanks": ("sample", "The ship was [MASK] at 16 [MASK] in [MASK] .", {**AUTO, "budget": 160}),
    "onepass-budget": (
        "sample",
        "[MASK] film [MASK] [MASK] [MASK] [MASK] [MASK] , [MASK] with the [MASK] caveat .",
        {**AUTO, "sampler": "confident-first", "budget": 300},
    ),
    "auto-batch-3": (
        "sample_many",
        [
            "the others wanted to [MASK] him and [MASK] him free .",
            "[MASK] [MASK] [MASK] [MASK] hostilities , [MASK] squadron [MASK] disbanded in march 1946 .",
            "I [MASK] it .",
        ],
        AUTO,
    ),
    "auto-3blanks-samples": (
        "sample",
        "The ship was [MASK] at 16 [MASK] in [MASK] .",
        {**AUTO, "top": None, "num_samples": 6},
    ),
    # --- the repeat-masked target and the product search
    "product-search-3blanks": (
        "sample",
        "the [MASK] of the [MASK] was [MASK] by the river .",
        {
            **ONE_PASS,
            "sampler": "product-search",
            "temperature": None,  # the search looks for the top most likely fillings
            "num_samples": None,
            "top": 5,
            "decode": "diverse",
            "diversity": 2.0,
            "budget": 300,
            "target": "repeat-masked",
        },
    ),
    "fixed-gibbs-mh-repeat-masked": (
        "sample",
        "the [MASK] of the [MASK] was [MASK] by the river .",
        {**TOKEN, **GIBBS_MH, "init": "left-to-right", "top": 3, "decode": "visited", "target": "repeat-masked"},
    ),
}
CASE_IDS = [f"{name}/seed{seed}" for name in CASES for seed in SEEDS]


def run_case(infiller, case_id: str) -> list[dict]:
    """The results of one case through the public API, as recorded: one entry per template."""
    name, seed = case_id.rsplit("/seed", 1)
    call, given, settings = CASES[name]
    settings = {**settings, "seed": int(seed)}
    if call == "sample":
        results = [infiller.sample(given, **settings)]
    elif call == "sample_many":
        results = infiller.sample_many(given, **settings)
    else:
        results = [infiller.rewrite(given, **settings)]
    return [
        {
            "template": r.template,
            "encoder_sequences": r.diagnostics.encoder_sequences,
            "samples": [
                {
                    "text": s.text,
                    "fills": list(s.fills),
                    "energy": float(s.energy),
                    "terms": None if s.terms is None else {k: float(v) for k, v in s.terms.items()},
                }
                for s in r.samples
            ],
        }
        for r in results
    ]


def describe(name: str) -> dict:
    """A case's definition as recorded (JSON types), to tell an edited case from a recorded one."""
    call, given, settings = CASES[name]
    return json.loads(json.dumps({"call": call, "input": given, "settings": settings}))


def differences(got: list[dict], want: list[dict]) -> list[str]:
    """Every way ``got`` differs from the recording ``want``: exact but for energies and terms."""
    out = []
    if len(got) != len(want):
        return [f"{len(got)} results, recorded {len(want)}"]
    for r, (g, w) in enumerate(zip(got, want)):
        for key in ("template", "encoder_sequences"):
            if g[key] != w[key]:
                out.append(f"result {r} {key}: {g[key]!r}, recorded {w[key]!r}")
        if len(g["samples"]) != len(w["samples"]):
            out.append(f"result {r}: {len(g['samples'])} samples, recorded {len(w['samples'])}")
        for k, (gs, ws) in enumerate(zip(g["samples"], w["samples"])):
            where = f"result {r} sample {k}"
            for key in ("text", "fills"):
                if gs[key] != ws[key]:
                    out.append(f"{where} {key}: {gs[key]!r}, recorded {ws[key]!r}")
            if not math.isclose(gs["energy"], ws["energy"], rel_tol=0, abs_tol=ABS_TOLERANCE):
                out.append(f"{where} energy: {gs['energy']!r}, recorded {ws['energy']!r}")
            if (gs["terms"] is None) != (ws["terms"] is None) or (
                gs["terms"] is not None and sorted(gs["terms"]) != sorted(ws["terms"])
            ):
                out.append(f"{where} terms: {gs['terms']!r}, recorded {ws['terms']!r}")
            elif gs["terms"] is not None:
                for term, value in ws["terms"].items():
                    if not math.isclose(gs["terms"][term], value, rel_tol=0, abs_tol=ABS_TOLERANCE):
                        out.append(f"{where} term {term}: {gs['terms'][term]!r}, recorded {value!r}")
    return out


def record() -> None:
    """Run every case on the current tree and write :data:`GOLDEN`."""
    import os

    import torch

    torch.set_num_threads(1)  # as tests/conftest.py
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from infill import Infiller

    infiller = Infiller(str(DEV_MODEL))
    cases = {}
    for name in CASES:
        cases[name] = {**describe(name), "seeds": {}}
        for seed in SEEDS:
            cases[name]["seeds"][str(seed)] = run_case(infiller, f"{name}/seed{seed}")
        print(f"recorded {name}", file=sys.stderr)
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(
        json.dumps(
            {
                "about": "Golden fillings of tests/test_golden.py, recorded before the refactor into subpackages; re-record "
                "(python tests/test_golden.py --record) only for an intended change of behaviour, saying why "
                "in the commit.",
                "model": "../shared/models/infill-dev-minilm-mlm",
                "cases": cases,
            },
            indent=1,
            ensure_ascii=False,
        )
        + "\n"
    )


# --- the tests (slow: they use the dev MLM)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN.read_text())["cases"]


@pytest.fixture(scope="module")
def infiller(dev_model_path):
    from infill import Infiller

    return Infiller(str(dev_model_path))


def test_recording_covers_the_cases(golden):
    assert sorted(golden) == sorted(CASES), "cases and recording differ: re-record (see the module docstring)"
    for name in CASES:
        assert sorted(golden[name]["seeds"]) == sorted(str(s) for s in SEEDS), name


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_golden(case_id, infiller, golden):
    name, seed = case_id.rsplit("/seed", 1)
    recorded = golden[name]
    assert describe(name) == {k: recorded[k] for k in ("call", "input", "settings")}, (
        f"{name}: its definition differs from the recorded one; re-record only for an intended change"
    )
    problems = differences(run_case(infiller, case_id), recorded["seeds"][seed])
    assert not problems, f"{case_id} differs from tests/golden/fillings.json:\n  " + "\n  ".join(problems)


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit(f"usage: python {Path(__file__).name} --record   (rewrites {GOLDEN})")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    record()
