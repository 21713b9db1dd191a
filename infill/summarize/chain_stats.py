"""Effective sample size of a scalar statistic along MCMC chains."""

from __future__ import annotations

import numpy as np


def effective_sample_size(trace: np.ndarray) -> float:
    """ESS of one chain ``(T,)`` by Geyer's initial monotone sequence estimator.

    A constant trace carries one distinct value: its ESS is reported as 1.
    """
    x = np.asarray(trace, dtype=np.float64)
    t = x.shape[0]
    if t < 4:
        return float(t)
    x = x - x.mean()
    var = float(np.dot(x, x)) / t
    if var <= 1e-12 * max(1.0, float(np.abs(trace).max()) ** 2):
        return 1.0
    size = 1 << (2 * t - 1).bit_length()
    f = np.fft.rfft(x, size)
    acf = np.fft.irfft(f * np.conj(f), size)[:t] / (t * var)
    # Geyer: sums of adjacent pairs, truncated at the first non-positive pair, made monotone
    pairs = acf[: (t // 2) * 2].reshape(-1, 2).sum(1)
    stop = np.argmax(pairs <= 0) if np.any(pairs <= 0) else len(pairs)
    pairs = np.minimum.accumulate(pairs[:stop]) if stop > 0 else pairs[:0]
    tau = -1.0 + 2.0 * pairs.sum() if stop > 0 else 1.0
    return float(t / max(tau, 1e-12)) if tau > 0 else float(t)


def mean_ess(traces: np.ndarray) -> float:
    """Mean per-chain ESS of ``traces (T, B)``."""
    traces = np.asarray(traces)
    return float(np.mean([effective_sample_size(traces[:, b]) for b in range(traces.shape[1])]))
