"""``impl/OverloadShedder``: every broker whose weighted max usage is at or above
``loadBalancerBrokerOverloadedThresholdPercentage`` sheds its largest bundles (by short-term throughput) until
``usage - threshold + 5 %`` of its throughput is covered, at least one bundle, only if it has more than one.

Docs vs code: the docs say one bundle, the most expensive by message rate, and count memory; the code sheds as
many bundles as needed, by throughput, and leaves heap memory out.
"""

from __future__ import annotations

from lb_pipeline.algorithms.shedding.common import LoadData, SheddingResult, Skip, Unload, largest_first, weights_of
from lb_pipeline.model.config import PulsarConfig

NAME = "OverloadShedder"


class OverloadShedder:
    name = NAME

    def find_bundles_for_unloading(self, load: LoadData, config: PulsarConfig) -> SheddingResult:
        out = SheddingResult()
        frame = load.frame(config)
        thr = config.get_int("loadBalancerBrokerOverloadedThresholdPercentage") / 100.0
        usage = frame.weighted_max(weights_of(config))
        throughput = frame.throughput
        recently = set(load.recently_unloaded)
        for i in (~(usage < thr)).nonzero()[0].tolist():  # Java skips only ``usage < threshold``
            broker, u = frame.brokers[i], float(usage[i])
            need = float(throughput[i]) * (u - thr + 0.05)
            if frame.bundle_count[i] <= 1:
                out.skips.append(Skip(broker, None, f"overloaded ({u:.1%}) but owns {frame.bundle_count[i]} bundle(s)"))
                continue
            for bundle, v in largest_first(frame, i, need, recently):
                out.unloads.append(Unload(NAME, broker, bundle, "Overloaded", "weightedMaxUsage", u, thr, need,
                                          "bytes/s", v))
        return out
