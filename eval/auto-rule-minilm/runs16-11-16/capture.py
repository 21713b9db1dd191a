"""Runs of 16 particles at 11-16 blank tokens, captured as scripts.auto_rule captures its kinds (NOTES.md).

PYTHONPATH=. python eval/auto-rule-minilm/runs16-11-16/capture.py SHARD HALF
"""

import sys

import scripts.auto_rule as ar
from scripts.harness import ROOT

ar.OUT = ROOT / "eval" / "auto-rule-minilm" / "runs16-11-16"
ar.SPECS["smc-runs16"] = "smc"
ar.OPTIONS["smc-runs16"] = {"tilt": 1.5, "run_size": 16}
ar.capture("smc-runs16", range(11, 17), sys.argv[2], [0, 1, 2], sys.argv[1])
