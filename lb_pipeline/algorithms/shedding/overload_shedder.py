"""``impl/OverloadShedder``: every broker whose weighted max usage is at or above
``loadBalancerBrokerOverloadedThresholdPercentage`` sheds its largest bundles (by short-term throughput) until
``usage - threshold + 5 %`` of its throughput is covered, at least one bundle, only if it has more than one.

Docs vs code: the docs say one bundle, the most expensive by message rate, and count memory; the code sheds as
many bundles as needed, by throughput, and leaves heap memory out.
"""

from __future__ import annotations

from lb_pipeline.algorithms.shedding.common import LoadData, SheddingResult, Skip, Unload, largest_first, weighted_max, weights_of
from lb_pipeline.model.config import PulsarConfig

NAME = "OverloadShedder"


class OverloadShedder:
    name = NAME

    def find_bundles_for_unloading(self, load: LoadData, config: PulsarConfig) -> SheddingResult:
        out = SheddingResult()
        thr = config.get_float("loadBalancerBrokerOverloadedThresholdPercentage") / 100.0
        weights = weights_of(config)
        for broker in load.brokers:
            u = weighted_max(load, broker, weights)
            if u < thr:  # equal to the threshold counts as overloaded
                continue
            need = load.throughput(broker) * (u - thr + 0.05)
            if len(load.bundles_of(broker)) <= 1:
                out.skips.append(Skip(broker, None, f"overloaded ({u:.1%}) but owns {len(load.bundles_of(broker))} bundle(s)"))
                continue
            for bundle, v in largest_first(load, broker, need):
                out.unloads.append(Unload(NAME, broker, bundle, "Overloaded", "weightedMaxUsage", u, thr, need,
                                          "bytes/s", v))
        return out
