"""`osbp bench`: every component's benchmark, run against real servers on loopback.

Each component owns its benchmark in `osbp.<component>.bench` as `main(argv) -> int`; each prints a table
and writes `bench-results/<component>.json`. This module only picks which ones run, importing each lazily.
Benchmarks are never timed tests: figures are reported, not asserted.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import statistics
from collections.abc import Sequence

__all__ = ["BENCHES", "latency_ms", "main", "percentile_ms"]

#: In dependency order: the platform first, the whole demo last.
BENCHES: dict[str, str] = {
    "backend": "osbp.backend.bench",
    "adapter": "osbp.adapter.bench",
    "mcp": "osbp.server.bench",
    "demo": "osbp.demo.bench",
}


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


def _available(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def main(argv: Sequence[str]) -> int:
    """Run the named benchmarks (all of them by default) and return a non-zero status if one failed."""
    parser = argparse.ArgumentParser(prog="osbp bench", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"benchmarks to run: {', '.join(BENCHES)}")
    args, rest = parser.parse_known_args(list(argv))
    unknown = [name for name in args.names if name not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    names = args.names or [name for name, module in BENCHES.items() if _available(module)]
    status = 0
    for name in names:
        module = importlib.import_module(BENCHES[name])
        status |= int(module.main(rest))
    return status
