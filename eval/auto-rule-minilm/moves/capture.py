"""The product's particles with one ``gibbs-mh`` move a particle (every visited state a candidate) at 4-7 blank
tokens, captured as scripts.auto_rule captures its kinds (NOTES.md, "One move a particle").

PYTHONPATH=. python eval/auto-rule-minilm/moves/capture.py SHARD HALF
"""

import sys

import scripts.auto_rule as ar
from scripts.harness import ROOT

ar.OUT = ROOT / "eval" / "auto-rule-minilm" / "moves"
ar.SPECS["smc-tilt1.5-moves1"] = "smc"
ar.OPTIONS["smc-tilt1.5-moves1"] = {"tilt": 1.5, "moves": 1}
ar.capture("smc-tilt1.5-moves1", range(4, 8), sys.argv[2], [0, 1, 2], sys.argv[1])
