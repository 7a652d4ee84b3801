"""Which brokers the heatmap shows first, and which it folds away.

At 100 or 1,000 brokers a heatmap in text order (broker-0, broker-1, broker-10, broker-100, …) hides the hot
brokers among the calm ones. Rows are ordered by peak usage, hottest first, natural name order on ties; on a
cluster of more than ``FOLD_ABOVE`` brokers, the brokers that never left the comfortable band all night are folded
into one row that expands. Comfortable means what Pulsar's shedders treat as nothing to do: at every snapshot
reported, at most ``loadBalancerBrokerOverloadedThresholdPercentage`` (OverloadShedder's trigger) and at most
``loadBalancerBrokerThresholdShedderPercentage`` points above the cluster's mean (ThresholdShedder's band).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FOLD_ABOVE = 20


def natural_key(name: str) -> list:
    """``broker-2`` before ``broker-10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


@dataclass(frozen=True)
class HeatRows:
    hot: list[str]  # shown, hottest first
    calm: list[str]  # folded, hottest first
    overload: float
    band: float


def heat_rows(values: dict[tuple[str, str], float | None], times: list[str], overload: float, band: float,
              fold_above: int = FOLD_ABOVE) -> HeatRows:
    """``values``: (broker, time) → max usage (1.0 = 100 %); ``overload`` and ``band`` as fractions."""
    brokers = sorted({b for b, _ in values}, key=natural_key)
    mean = {}
    for t in times:
        seen = [v for (b, tt), v in values.items() if tt == t and v is not None]
        mean[t] = sum(seen) / len(seen) if seen else None
    peak = {b: max((v for (bb, _), v in values.items() if bb == b and v is not None), default=-1.0) for b in brokers}
    ordered = sorted(brokers, key=lambda b: (-peak[b], natural_key(b)))

    def calm(b: str) -> bool:
        seen = [(t, values.get((b, t))) for t in times if values.get((b, t)) is not None]
        return bool(seen) and all(v <= overload and v <= mean[t] + band for t, v in seen)

    if len(brokers) <= fold_above:
        return HeatRows(ordered, [], overload, band)
    return HeatRows([b for b in ordered if not calm(b)], [b for b in ordered if calm(b)], overload, band)
