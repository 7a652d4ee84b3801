"""``impl/ThresholdShedder`` (the released default): per-broker EMA of the weighted max usage; a broker more than
``loadBalancerBrokerThresholdShedderPercentage`` above the average sheds ``usage - avg - threshold + 5 %`` of its
throughput (if at least ``loadBalancerBundleUnloadMinThroughputThreshold`` MB), largest bundles first.

Docs vs code: the docs say "until 5 % below the average"; the code aims at ``avg + threshold - 5 %`` and
measures the amount in bytes/s of throughput. The optional lower-boundary pass advances the EMA a second time.
The history forgets brokers that leave the cluster (``onActiveBrokersChange``).

The history is state the replay cannot see start (it starts with the leader's load manager); where the leader
logged it ("Attempting to shed load on {broker}, which has max resource usage above avgUsage and threshold
{history}% > {average}% + …"), ``anchor`` takes it from there (``logged_history.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lb_pipeline.algorithms.shedding.common import MIB, LoadData, SheddingResult, Skip, Unload, largest_first, weights_of
from lb_pipeline.model.config import PulsarConfig

NAME = "ThresholdShedder"


@dataclass
class ThresholdShedder:
    history: dict[str, float] = field(default_factory=dict)  # broker → smoothed usage (brokerAvgResourceUsage)
    name: str = NAME

    def on_active_brokers_change(self, active) -> None:
        keep = set(active)
        self.history = {b: u for b, u in self.history.items() if b in keep}

    def anchor(self, broker: str, history: float, average: float, brokers) -> None:
        """The leader's own state after a logged cycle: ``broker``'s history and the average over ``brokers`` (the
        brokers of that cycle), both fractions. The other brokers' histories are not logged: they keep their
        proportions and are scaled so that the average is the leader's (the average is then exact, and stays so:
        each cycle steps it by the mean usage, whatever its split; a broker's own history is exact once it is
        logged)."""
        brokers = list(dict.fromkeys([*brokers, broker]))
        others = [b for b in brokers if b != broker]
        rest = max(0.0, average * len(brokers) - history)
        held = sum(max(0.0, self.history.get(b, 0.0)) for b in others)
        for b in others:
            self.history[b] = rest * max(0.0, self.history.get(b, 0.0)) / held if held > 0 else rest / len(others)
        self.history[broker] = history

    def update_all(self, frame, config: PulsarConfig) -> float:
        """``getBrokerAvgUsage``: one EMA step per broker, summed in map order."""
        p = config.get_float("loadBalancerHistoryResourcePercentage")
        usage = frame.weighted_max(weights_of(config)).tolist()
        total = 0.0
        for broker, r in zip(frame.brokers, usage):
            h = self.history.get(broker)
            self.history[broker] = r if h is None else h * p + (1.0 - p) * r
            total += self.history[broker]
        return total / len(frame.brokers) if frame.brokers else 0.0

    def find_bundles_for_unloading(self, load: LoadData, config: PulsarConfig) -> SheddingResult:
        out = SheddingResult()
        frame = load.frame(config)
        thr = config.get_int("loadBalancerBrokerThresholdShedderPercentage") / 100.0
        min_bytes = config.get_float("loadBalancerBundleUnloadMinThroughputThreshold") * MIB
        recently = set(load.recently_unloaded)
        avg = self.update_all(frame, config)
        if avg == 0:
            return out
        throughput = frame.throughput.tolist()
        for i, broker in enumerate(frame.brokers):
            cur = self.history.get(broker, 0.0)
            if cur < avg + thr:
                continue
            need = throughput[i] * (cur - avg - thr + 0.05)
            if need < min_bytes:
                out.skips.append(Skip(broker, None, f"would shed {need / MIB:.2f} MB/s, below the {min_bytes / MIB:g} MB minimum"))
                continue
            if frame.bundle_count[i] <= 1:
                out.skips.append(Skip(broker, None, "above the average but owns a single bundle"))
                continue
            for bundle, v in largest_first(frame, i, need, recently):
                out.unloads.append(Unload(NAME, broker, bundle, "AboveAverage", "weightedMaxUsageEMA", cur, avg + thr,
                                          need, "bytes/s", v))
        if not out.unloads and config.get_bool("lowerBoundarySheddingEnabled"):
            self._lower_boundary(frame, config, thr, min_bytes, recently, out)
        return out

    def _lower_boundary(self, frame, config, thr, min_bytes, recently, out) -> None:
        avg = self.update_all(frame, config)  # the second EMA step of this cycle, as in Pulsar
        best, best_usage, someone_below = None, avg - thr, False
        for i, broker in enumerate(frame.brokers):
            u = self.history.get(broker, 0.0)
            if u > best_usage and frame.bundle_count[i] > 1:
                best, best_usage = i, u
            if u < avg - thr:
                someone_below = True
        if not someone_below or best is None:
            return
        need = float(frame.throughput[best]) * thr * 0.5
        if min_bytes > need:
            return
        for bundle, v in largest_first(frame, best, need, recently):
            out.unloads.append(Unload(NAME, frame.brokers[best], bundle, "LowerBoundary", "weightedMaxUsageEMA",
                                      best_usage, avg - thr, need, "bytes/s", v))
