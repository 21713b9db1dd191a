import json, sys, statistics as st
from scripts.reader_study import metrics
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["row"], {})[(r["id"], r["seed"])] = r
keys = sorted(set(by.get("search", {})) & set(by.get("particles", {})))
ms = {k: metrics({**by["search"][k], "encoder_sequences": by["search"][k]["encoder_sequences"], "seconds": 1}) for k in keys}
mp = {k: metrics({**by["particles"][k], "encoder_sequences": by["particles"][k]["encoder_sequences"], "seconds": 1}) for k in keys}
hi = sum(ms[k]["pll"] > mp[k]["pll"] + 1e-4 for k in keys); lo = sum(ms[k]["pll"] < mp[k]["pll"] - 1e-4 for k in keys)
print(f"pairs {len(keys)}: search PLL higher {hi}, lower {lo}, share {hi/max(1,hi+lo):.0%}")
for name in ("pll", "self_bleu", "top1", "top5", "repeated", "sequences"):
    print(f"  {name}: search {st.fmean(ms[k][name] for k in keys):.3f}  particles {st.fmean(mp[k][name] for k in keys):.3f}")
print("  kept: search", st.fmean(len(by['search'][k]['fills']) for k in keys), "particles", st.fmean(len(by['particles'][k]['fills']) for k in keys))
