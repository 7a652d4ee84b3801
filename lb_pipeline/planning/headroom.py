"""Headroom when brokers are lost: the largest broker (N-1) or a whole failure domain.

The lost brokers' load lands on the survivors; Pulsar's balancing spreads it (what the simulation section shows
it does, given time), so the survivors' usage becomes ``load / remaining capacity`` per resource. A cluster is
sized for the loss when that stays under ``loadBalancerBrokerOverloadedThresholdPercentage``; otherwise the
brokers to add are sized from the cluster's typical (median) broker of that resource.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Loss:
    scenario: str  # "largest broker" or "domain <name>"
    lost: list[str]
    usage_after: float  # percent of the survivors' capacity
    headroom: float  # threshold - usage_after (percentage points)
    brokers_to_add: int | None


def survive(load: np.ndarray, limit: np.ndarray, lost: np.ndarray, threshold: float) -> tuple[float, float, int | None]:
    """(usage after the loss %, headroom in points, brokers to add) for one resource; ``load`` and ``limit`` per
    broker in the resource's unit, ``lost`` a mask of the brokers that go. None to add: no broker reports a limit, or
    the threshold is 0 or less (``loadBalancerBrokerOverloadedThresholdPercentage=0`` divided by zero)."""
    remaining = float(limit[~lost].sum())
    total = float(load.sum())
    usage = 100.0 * total / remaining if remaining > 0 else math.inf
    typical = float(np.median(limit[limit > 0])) if (limit > 0).any() else 0.0
    if threshold <= 0:  # Pulsar calls any broker with load overloaded: no number of brokers keeps under it
        return usage, threshold - usage, (0 if total <= 0 else None)
    missing = total * 100.0 / threshold - remaining
    add = 0 if missing <= 0 else (math.ceil(missing / typical) if typical > 0 else None)
    return usage, threshold - usage, add


def scenarios(brokers: list[str], domains: list[str | None], load: np.ndarray,
              limit: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """(name, mask of the brokers lost) of every loss scenario: the broker with the most capacity (the ties: the
    most loaded), then each failure domain in name order (when there are two or more)."""
    out = []
    if len(brokers) > 1:
        largest = max(range(len(brokers)), key=lambda i: (limit[i], load[i], brokers[i]))
        mask = np.zeros(len(brokers), bool)
        mask[largest] = True
        out.append(("largest broker", mask))
    named = sorted({d for d in domains if d})
    if len(named) > 1:
        out += [(f"domain {d}", np.array([x == d for x in domains])) for d in named]
    return out


def losses(brokers: list[str], domains: list[str | None], load: np.ndarray, limit: np.ndarray,
           threshold: float, growth: float = 1.0) -> list[Loss]:
    """Every loss scenario of one resource (``scenarios``), the load spread evenly over the survivors. ``growth``
    scales the load (the forecast's factor at a horizon)."""
    load = np.asarray(load, float) * growth
    limit = np.asarray(limit, float)
    return [Loss(name, [b for b, m in zip(brokers, mask) if m], *survive(load, limit, mask, threshold))
            for name, mask in scenarios(brokers, domains, load, limit)]
