"""Broker resource usage as Pulsar computes it (``ResourceUsage``, ``LocalBrokerData``, ``BrokerLoadData``).

``ResourceUsage.percentUsage()`` divides and multiplies in 32-bit float, so 30/100 is 30.000001907348633, not 30.
Every consumer widens that float to double; everything after the percent is double arithmetic.
Vectorised forms (numpy float32) are provided for Spark/pandas use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

RESOURCES = ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut")
# getMaxResourceUsage() leaves heap memory out (it is JVM heap, not host RAM).
MAX_USAGE_RESOURCES = ("cpu", "directMemory", "bandwidthIn", "bandwidthOut")


def percent_usage(usage: float, limit: float) -> float:
    """``ResourceUsage.percentUsage``: 0 when ``limit <= 0`` (or NaN), else float32 ``usage/limit*100``."""
    if not limit > 0:
        return 0.0
    with np.errstate(all="ignore"):
        p = np.float32(np.float32(usage) / np.float32(limit))
        return float(np.float32(p * np.float32(100.0)))


def percent_usage_array(usage, limit) -> np.ndarray:
    """:func:`percent_usage` element-wise (the ``limit > 0`` test is on the double, as in Java)."""
    usage = np.asarray(usage, dtype=np.float64)
    limit = np.asarray(limit, dtype=np.float64)
    with np.errstate(all="ignore"):
        p = (usage.astype(np.float32) / limit.astype(np.float32)) * np.float32(100.0)
    return np.where(limit > 0, p, np.float32(0.0)).astype(np.float32).astype(np.float64)


def _java_max(values) -> float:
    """Java loop ``max = -inf; if (v > max) max = v``: NaN never wins."""
    best = float("-inf")
    for v in values:
        if v > best:
            best = v
    return best


@dataclass(frozen=True)
class Weights:
    """Resource weights (``loadBalancer*ResourceWeight``)."""

    cpu: float = 1.0
    memory: float = 0.0
    direct_memory: float = 0.0
    bandwidth_in: float = 1.0
    bandwidth_out: float = 1.0

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> "Weights":
        def f(key: str, default: float) -> float:
            return float(config.get(key, default))

        def bw(new: str, old: str) -> float:
            # New key wins if it differs from 1.0, else the deprecated spelling if that differs, else 1.0.
            value = f(new, 1.0)
            return value if value != 1.0 else f(old, 1.0)

        return cls(
            cpu=f("loadBalancerCPUResourceWeight", 1.0),
            memory=f("loadBalancerMemoryResourceWeight", 0.0),
            direct_memory=f("loadBalancerDirectMemoryResourceWeight", 0.0),
            bandwidth_in=bw("loadBalancerBandwidthInResourceWeight", "loadBalancerBandwithInResourceWeight"),
            bandwidth_out=bw("loadBalancerBandwidthOutResourceWeight", "loadBalancerBandwithOutResourceWeight"),
        )


def percents(report: Mapping) -> dict[str, float]:
    """Percent usage of each resource of a ``LocalBrokerData``/``BrokerLoadData`` JSON object."""
    out = {}
    for r in RESOURCES:
        ru = report.get(r) or {}
        out[r] = percent_usage(float(ru.get("usage", 0.0)), float(ru.get("limit", 0.0)))
    return out


def max_resource_usage(report: Mapping) -> float:
    """``LocalBrokerData.getMaxResourceUsage()``: unweighted, heap excluded, as a fraction; a float maximum
    divided by ``100.0f`` in float32."""
    p = percents(report)
    return float(np.float32(np.float32(_java_max(p[r] for r in MAX_USAGE_RESOURCES)) / np.float32(100.0)))


def max_resource_usage_with_weight(report: Mapping, w: Weights) -> float:
    """The current 4-argument weighted max (heap dropped by PR #19559), as a fraction."""
    p = percents(report)
    return (
        _java_max(
            (p["cpu"] * w.cpu, p["directMemory"] * w.direct_memory, p["bandwidthIn"] * w.bandwidth_in,
             p["bandwidthOut"] * w.bandwidth_out)
        )
        / 100.0
    )


def max_resource_usage_with_weight_and_memory(report: Mapping, w: Weights) -> float:
    """The 5-argument weighted max that still counts heap (older modular code, extensible ``BrokerLoadData``)."""
    p = percents(report)
    return (
        _java_max(
            (p["cpu"] * w.cpu, p["memory"] * w.memory, p["directMemory"] * w.direct_memory,
             p["bandwidthIn"] * w.bandwidth_in, p["bandwidthOut"] * w.bandwidth_out)
        )
        / 100.0
    )


def ema(previous: float | None, current: float, history_weight: float) -> float:
    """``x = x*h + (1-h)*current``, seeded with the first value (ThresholdShedder, BrokerLoadData)."""
    return current if previous is None else previous * history_weight + (1 - history_weight) * current
