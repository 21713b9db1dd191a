"""Preconditioned DMALA against every single step size on two scales of plausibility
(:class:`infill.energies.toy.TwoScalePotts`): total variation of each block from its exact marginal after a
fixed number of steps from one corner, over several seeds. Prints a Markdown table.

    python scripts/preconditioner.py [--chains 4000] [--steps 10] [--seeds 3] > eval/preconditioner.md
"""
from __future__ import annotations

import argparse
import statistics

import torch

from infill.energies.exact import tv_noise_floor
from infill.energies.toy import TwoScalePotts
from infill.samplers import make_sampler, sample

SINGLE = (0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 20.0)


def rows(binary_scale: float) -> list[tuple[str, dict]]:
    """(label, dmala options) for every single step, the adapted default and the preconditioned runs."""
    g = (1.0,) * 2 + (binary_scale,) * 6
    out = [(f"single step {a}", {"step_size": a, "adapt_steps": 0}) for a in SINGLE]
    out.append(("single step, adapted (default)", {}))
    for a in (0.3, 0.5):
        out.append((f"step {a}, g = {binary_scale:g} on the binary block", {"step_size": a, "adapt_steps": 0,
                                                                             "preconditioner": g}))
    out.append((f"adapted, g = {binary_scale:g} on the binary block", {"preconditioner": g}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=4000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--binary-scale", type=float, default=10.0, help="g on the binary block")
    args = parser.parse_args()
    torch.set_num_threads(1)
    energy = TwoScalePotts()
    x0 = torch.zeros(args.chains, 8, dtype=torch.long)
    print(f"# Preconditioned DMALA on two scales of plausibility\n\n`TwoScalePotts()`: 2 coupled variables with 32 "
          f"plausible values (Potts coupling 2.0) and 6 binary ones; {args.chains} chains from one corner, "
          f"TV of each block's distribution after {args.steps} steps from its exact marginal; mean over "
          f"{args.seeds} seeds (min-max). Noise floors at {args.chains} draws: many-valued "
          f"{tv_noise_floor(energy.many_marginal, args.chains):.3f}, binary "
          f"{tv_noise_floor(energy.binary_marginal, args.chains):.3f}.\n")
    print("| dmala | many-valued block TV | binary block TV | acceptance |\n| --- | --- | --- | --- |")
    for label, options in rows(args.binary_scale):
        many, binary, accept = [], [], []
        for seed in range(args.seeds):
            generator = torch.Generator().manual_seed(seed)
            trace = sample(make_sampler("dmala", **options), energy, x0, args.steps, generator)
            m, b = energy.block_distances(trace.samples[-1])
            many.append(m), binary.append(b), accept.append(trace.acceptance_rate)
        cells = [f"{statistics.mean(v):.3f} ({min(v):.3f}-{max(v):.3f})" for v in (many, binary)]
        print(f"| {label} | {cells[0]} | {cells[1]} | {statistics.mean(accept):.2f} |")


if __name__ == "__main__":
    main()
