"""``impl/ThresholdShedder`` (the released default): per-broker EMA of the weighted max usage; a broker more than
``loadBalancerBrokerThresholdShedderPercentage`` above the average sheds ``usage - avg - threshold + 5 %`` of its
throughput (if at least ``loadBalancerBundleUnloadMinThroughputThreshold`` MB), largest bundles first.

Docs vs code: the docs say "until 5 % below the average"; the code aims at ``avg + threshold - 5 %`` and
measures the amount in bytes/s of throughput. The optional lower-boundary pass advances the EMA a second time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lb_pipeline.algorithms.shedding.common import (
    MIB, LoadData, SheddingResult, Skip, Unload, largest_first, weighted_max, weights_of,
)
from lb_pipeline.model.config import PulsarConfig

NAME = "ThresholdShedder"


@dataclass
class ThresholdShedder:
    history: dict[str, float] = field(default_factory=dict)  # broker → smoothed usage (never pruned, as in Pulsar)
    name: str = NAME

    def _update_all(self, load: LoadData, config: PulsarConfig) -> float:
        p = config.get_float("loadBalancerHistoryResourcePercentage")
        weights = weights_of(config)
        total = 0.0
        for broker in load.brokers:
            r = weighted_max(load, broker, weights)
            self.history[broker] = r if broker not in self.history else self.history[broker] * p + (1 - p) * r
            total += self.history[broker]
        return total / len(load.brokers) if load.brokers else 0.0

    def find_bundles_for_unloading(self, load: LoadData, config: PulsarConfig) -> SheddingResult:
        out = SheddingResult()
        thr = config.get_float("loadBalancerBrokerThresholdShedderPercentage") / 100.0
        min_bytes = config.get_float("loadBalancerBundleUnloadMinThroughputThreshold") * MIB
        avg = self._update_all(load, config)
        if avg == 0:
            return out
        for broker in load.brokers:
            cur = self.history[broker]
            if cur < avg + thr:
                continue
            need = load.throughput(broker) * (cur - avg - thr + 0.05)
            if need < min_bytes:
                out.skips.append(Skip(broker, None, f"would shed {need / MIB:.2f} MB/s, below the {min_bytes / MIB:g} MB minimum"))
                continue
            if len(load.bundles_of(broker)) <= 1:
                out.skips.append(Skip(broker, None, "above the average but owns a single bundle"))
                continue
            for bundle, v in largest_first(load, broker, need):
                out.unloads.append(Unload(NAME, broker, bundle, "AboveAverage", "weightedMaxUsageEMA", cur, avg + thr,
                                          need, "bytes/s", v))
        if not out.unloads and config.get_bool("lowerBoundarySheddingEnabled"):
            self._lower_boundary(load, config, thr, min_bytes, out)
        return out

    def _lower_boundary(self, load, config, thr, min_bytes, out) -> None:
        avg = self._update_all(load, config)  # the second EMA step of this cycle, as in Pulsar
        best, best_usage, someone_below = None, avg - thr, False
        for broker in load.brokers:
            u = self.history[broker]
            if u > best_usage and len(load.bundles_of(broker)) > 1:
                best, best_usage = broker, u
            if u < avg - thr:
                someone_below = True
        if best is None or not someone_below:
            return
        need = load.throughput(best) * thr * 0.5
        if min_bytes > need:
            return
        for bundle, v in largest_first(load, best, need):
            out.unloads.append(Unload(NAME, best, bundle, "LowerBoundary", "weightedMaxUsageEMA", best_usage, avg - thr,
                                      need, "bytes/s", v))
