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
    reportedAt: int = 0  # when the reporter last wrote it to the load data store (``BrokerLoadDataReporter``)
    # the last update's weighted max and throughput: what a report with the same inputs averages in again (``step``)
    weightedMax: float = field(default=1.0, repr=False, compare=False)
    throughput: float = field(default=0.0, repr=False, compare=False)

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
        self.weightedMax, self.throughput = weighted, self.msgThroughputIn + self.msgThroughputOut
        if self.updatedAt == 0:
            self.weightedMaxEMA, self.msgThroughputEMA = weighted, self.throughput
            self.updatedAt = int(now_ms)
            return self
        return self.step(config, now_ms)

    def step(self, config: Mapping[str, str], now_ms: int) -> "BrokerLoadData":
        """``update`` again with the inputs of the last one: only the averages and ``updatedAt`` move (a reporter
        runs every 5 s; between two snapshots the inputs are the same)."""
        h = float(config.get("loadBalancerHistoryResourcePercentage", 0.9))
        self.weightedMaxEMA = self.weightedMaxEMA * h + (1.0 - h) * self.weightedMax
        self.msgThroughputEMA = self.msgThroughputEMA * h + (1.0 - h) * self.throughput
        self.updatedAt = int(now_ms)
        return self

    def clear(self) -> None:
        """``clear``: back to the values before any update (the next update seeds both averages again)."""
        self.__init__()

    def to_json(self) -> dict:
        """The JSON a broker publishes (``loadbalance/broker-load-data`` topic), as TransferShedder reads it."""
        out = {r: {"usage": u, "limit": lim} for r, (u, lim) in self.usage.items()}
        out.update({k: getattr(self, k) for k in ("msgThroughputIn", "msgThroughputOut", "msgRateIn", "msgRateOut",
                                                  "bundleCount", "topics", "maxResourceUsage", "weightedMaxEMA",
                                                  "msgThroughputEMA", "updatedAt", "reportedAt")})
        return out
