"""``extensions/data/BrokerLoadData``: what a broker of the extensible load manager publishes, and its update.

``update`` is what ``BrokerLoadDataReporter`` runs on each report: resource usages, traffic, then three
features: ``maxResourceUsage`` (unweighted, heap excluded), ``weightedMaxEMA`` (weighted max *including* heap,
smoothed by ``loadBalancerHistoryResourcePercentage``) and ``msgThroughputEMA``. The first update seeds both
averages with the current value (``updatedAt == 0``). Defaults before any update are Pulsar's: usage 1.0
(100 %), EMA 1.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lb_pipeline.model.usage import RESOURCES, Weights, _java_max, percent_usage


@dataclass
class BrokerLoadData:
    usage: dict[str, tuple[float, float]] = field(default_factory=lambda: {r: (0.0, 0.0) for r in RESOURCES})
    msgThroughputIn: float = 0.0
    msgThroughputOut: float = 0.0
    msgRateIn: float = 0.0
    msgRateOut: float = 0.0
    bundleCount: int = 0
    topics: int = 0
    maxResourceUsage: float = 1.0
    weightedMaxEMA: float = 1.0
    msgThroughputEMA: float = 0.0
    updatedAt: int = 0

    def update(self, usage: Mapping[str, tuple[float, float]], msg_throughput_in: float, msg_throughput_out: float,
               msg_rate_in: float, msg_rate_out: float, bundle_count: int, topics: int, config: Mapping[str, str],
               now_ms: int) -> "BrokerLoadData":
        """``update(SystemResourceUsage, ...)``: ``usage`` maps each resource to (usage, limit)."""
        self.usage = {r: tuple(map(float, usage.get(r, (0.0, 0.0)))) for r in RESOURCES}
        self.msgThroughputIn, self.msgThroughputOut = float(msg_throughput_in), float(msg_throughput_out)
        self.msgRateIn, self.msgRateOut = float(msg_rate_in), float(msg_rate_out)
        self.bundleCount, self.topics = int(bundle_count), int(topics)
        pct = {r: percent_usage(*self.usage[r]) for r in RESOURCES}
        self.maxResourceUsage = _java_max(pct[r] for r in ("cpu", "directMemory", "bandwidthIn", "bandwidthOut")) / 100.0
        w = Weights.from_config(config)
        weighted = _java_max((pct["cpu"] * w.cpu, pct["memory"] * w.memory, pct["directMemory"] * w.direct_memory,
                              pct["bandwidthIn"] * w.bandwidth_in, pct["bandwidthOut"] * w.bandwidth_out)) / 100.0
        h = float(config.get("loadBalancerHistoryResourcePercentage", 0.9))
        throughput = self.msgThroughputIn + self.msgThroughputOut
        first = self.updatedAt == 0
        self.weightedMaxEMA = weighted if first else self.weightedMaxEMA * h + (1.0 - h) * weighted
        self.msgThroughputEMA = throughput if first else self.msgThroughputEMA * h + (1.0 - h) * throughput
        self.updatedAt = int(now_ms)
        return self

    def to_json(self) -> dict:
        """The JSON a broker publishes (``loadbalance/broker-load-data`` topic), as TransferShedder reads it."""
        out = {r: {"usage": u, "limit": lim} for r, (u, lim) in self.usage.items()}
        out.update({k: getattr(self, k) for k in ("msgThroughputIn", "msgThroughputOut", "msgRateIn", "msgRateOut",
                                                  "bundleCount", "topics", "maxResourceUsage", "weightedMaxEMA",
                                                  "msgThroughputEMA", "updatedAt")})
        return out
