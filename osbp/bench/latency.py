"""The one latency summary every benchmark reports: percentiles and mean in milliseconds."""

from __future__ import annotations

import statistics

__all__ = ["latency_ms", "percentile_ms"]


def percentile_ms(samples: list[float], q: int) -> float:
    """The ``q``-th percentile (inclusive method) of latencies in seconds, in milliseconds to 3 places."""
    if len(samples) == 1:
        return round(samples[0] * 1000, 3)
    return round(statistics.quantiles(samples, n=100, method="inclusive")[q - 1] * 1000, 3)


def latency_ms(samples: list[float]) -> dict[str, float]:
    """The figures every latency benchmark reports: count, p50, p99 and mean, in milliseconds."""
    return {
        "n": len(samples),
        "p50_ms": percentile_ms(samples, 50),
        "p99_ms": percentile_ms(samples, 99),
        "mean_ms": round(statistics.fmean(samples) * 1000, 3),
    }
