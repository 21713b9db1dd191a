"""The first round of particles in ``top`` runs at 11-16 blank tokens (runs of 10 at the default budget and
``top=5``: 51-52 particles over 5), captured as scripts.auto_rule captures its kinds (NOTES.md, "Top runs").

PYTHONPATH=. python eval/auto-rule-minilm/top-runs/tune-captures/capture.py SHARD HALF
"""

import sys

import scripts.auto_rule as ar
from scripts.harness import ROOT

ar.OUT = ROOT / "eval" / "auto-rule-minilm" / "top-runs" / "tune-captures"
ar.SPECS["smc-runs10"] = "smc"
ar.OPTIONS["smc-runs10"] = {"tilt": 1.5, "run_size": 10}
ar.capture("smc-runs10", range(11, 17), sys.argv[2], [0, 1, 2], sys.argv[1])
