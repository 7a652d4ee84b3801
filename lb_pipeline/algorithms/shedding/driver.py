"""``ModularLoadManagerImpl.doLoadShedding``: the cycle around a modular shedding strategy.

1. nothing when load balancing or shedding is off, or one broker or fewer is available;
2. purge recently-unloaded bundles older than ``loadBalancerSheddingGracePeriodMinutes`` (strict ``<``);
3. run the strategy; then, per selected bundle: skip excluded namespaces, apply the anti-affinity gate, pick a
   destination with the placement strategy (AvgShedder's own plan when it is also the placement strategy), skip
   when placement picks the source broker; record the unload time for the grace period.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from lb_pipeline.algorithms import anti_affinity as aa
from lb_pipeline.algorithms.shedding.avg_shedder import AvgShedder
from lb_pipeline.algorithms.shedding.common import LoadData, SheddingResult, Skip, namespace_of
from lb_pipeline.algorithms.shedding.overload_shedder import OverloadShedder
from lb_pipeline.algorithms.shedding.placement import LeastLongTermMessageRate, LeastResourceUsageWithWeight, RoundRobinBrokerSelector
from lb_pipeline.algorithms.shedding.threshold_shedder import ThresholdShedder
from lb_pipeline.algorithms.shedding.uniform_load_shedder import UniformLoadShedder
from lb_pipeline.model.config import PulsarConfig

MODULAR_STRATEGIES = {"OverloadShedder": OverloadShedder, "ThresholdShedder": ThresholdShedder,
                      "UniformLoadShedder": UniformLoadShedder, "AvgShedder": AvgShedder}
PLACEMENTS = {"LeastLongTermMessageRate": LeastLongTermMessageRate,
              "LeastResourceUsageWithWeight": LeastResourceUsageWithWeight,
              "RoundRobinBrokerSelector": RoundRobinBrokerSelector}


@dataclass
class ModularShedding:
    """One shedding strategy and its placement strategy, with the state a replay carries between cycles."""

    strategy: object
    placement: object | None = None  # None: AvgShedder places by its own plan
    seed: int = 0
    recently_unloaded: dict[str, int] = field(default_factory=dict)

    @classmethod
    def named(cls, strategy: str, config: PulsarConfig, seed: int = 0) -> "ModularShedding":
        if strategy not in MODULAR_STRATEGIES:
            raise ValueError(f"unknown shedding strategy {strategy!r}; known: {', '.join(MODULAR_STRATEGIES)}, TransferShedder")
        placement_name = config["loadBalancerLoadPlacementStrategy"].rsplit(".", 1)[-1]
        if strategy == "AvgShedder" and placement_name in ("AvgShedder", "LeastLongTermMessageRate"):
            placement = None  # bound to its plans (the newest default pairs them; the docs ask for both)
        else:
            placement = PLACEMENTS.get(placement_name, LeastLongTermMessageRate)(rng=random.Random(seed)) \
                if placement_name != "RoundRobinBrokerSelector" else RoundRobinBrokerSelector()
        return cls(MODULAR_STRATEGIES[strategy](), placement, seed)

    def run_cycle(self, load: LoadData, config: PulsarConfig, now_ms: int, ownership: dict[str, str] | None = None,
                  groups: dict[str, str | None] | None = None) -> SheddingResult:
        out = SheddingResult()
        if not (config.get_bool("loadBalancerEnabled") and config.get_bool("loadBalancerSheddingEnabled")):
            out.notes.append("load balancing or shedding is disabled")
            return out
        brokers = list(load.brokers)
        if len(brokers) <= 1:
            out.notes.append("one broker or fewer: nothing to balance")
            return out
        cutoff = now_ms - config.get_int("loadBalancerSheddingGracePeriodMinutes") * 60_000
        self.recently_unloaded = {b: t for b, t in self.recently_unloaded.items() if t >= cutoff}
        load = replace(load, recently_unloaded=dict(self.recently_unloaded))
        found = self.strategy.find_bundles_for_unloading(load, config)
        out.skips.extend(found.skips)
        out.notes.extend(found.notes)
        excluded = set(config.get_list("loadBalancerSheddingExcludedNamespaces"))
        for u in found.unloads:
            ns = namespace_of(u.bundle)
            if ns in excluded:
                out.skips.append(Skip(u.broker, u.bundle, "namespace is in loadBalancerSheddingExcludedNamespaces"))
                continue
            if ownership is not None and groups is not None:
                counts = aa.owned_counts_modular(ns, ownership, groups)
                if not aa.should_unload(u.broker, brokers, counts):
                    out.skips.append(Skip(u.broker, u.bundle, "unloading would not improve the anti-affinity spread"))
                    continue
            if self.placement is None and isinstance(self.strategy, AvgShedder):
                dest = self.strategy.select_broker_for_bundle(brokers, u.bundle)
            else:
                dest = self.placement.select(brokers, load, config, u.bundle)
            if dest is None:
                out.skips.append(Skip(u.broker, u.bundle, "placement found no destination"))
                continue
            if dest == u.broker:
                out.skips.append(Skip(u.broker, u.bundle, "placement chose the source broker again"))
                continue
            out.unloads.append(replace(u, destination=dest))
            self.recently_unloaded[u.bundle] = now_ms
        return out


def apply_unloads(load: LoadData, unloads) -> LoadData:
    """The load after moving each unloaded bundle's current stats from its source to its destination (resource
    usage is left as reported; message totals move with the bundles)."""
    brokers = {b: {**r, "lastStats": dict(r.get("lastStats") or {}), "bundles": list(r.get("bundles") or [])}
               for b, r in load.brokers.items()}
    for u in unloads:
        if not u.destination or u.bundle not in brokers[u.broker]["lastStats"]:
            continue
        stats = brokers[u.broker]["lastStats"].pop(u.bundle)
        brokers[u.broker]["bundles"].remove(u.bundle)
        brokers[u.destination]["lastStats"][u.bundle] = stats
        brokers[u.destination]["bundles"].append(u.bundle)
    for r in brokers.values():
        for k in ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut"):
            r[k] = sum(float(s.get(k, 0.0)) for s in r["lastStats"].values())
    return LoadData(brokers, load.bundle_data, load.recently_unloaded)
