"""``ModularLoadManagerImpl.doLoadShedding``: the cycle around a modular shedding strategy.

1. nothing when load balancing or shedding is off, or one broker or fewer is available;
2. the strategies forget brokers that left (``onActiveBrokersChange``, run by the leader's ``updateAll``);
3. purge recently-unloaded bundles older than ``loadBalancerSheddingGracePeriodMinutes`` (strict ``<``);
4. run the strategy; then, broker by broker in the order of its result ``Multimap``, per selected bundle: skip
   excluded namespaces (PIP-380, master only), the isolation-policy gate (some other broker may own it), the
   anti-affinity gate, then the destination from the whole placement path (``selection.ModularPlacement``);
   skip when there is none or it is the source broker; record the unload time for the grace period.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from lb_pipeline.algorithms.shedding.avg_shedder import AvgShedder
from lb_pipeline.algorithms.shedding.common import LoadData, SheddingResult, Skip, namespace_of
from lb_pipeline.algorithms.shedding.overload_shedder import OverloadShedder
from lb_pipeline.algorithms.shedding.placement import LeastLongTermMessageRate, LeastResourceUsageWithWeight, RoundRobinBrokerSelector
from lb_pipeline.algorithms.shedding.selection import ClusterState, LookupFailed, ModularPlacement
from lb_pipeline.algorithms.shedding.threshold_shedder import ThresholdShedder
from lb_pipeline.algorithms.shedding.uniform_load_shedder import UniformLoadShedder
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.load_manager import impl_name
from lb_pipeline.model.java_values import grace_cutoff
from lb_pipeline.model.javahash import JavaHashMap

MODULAR_STRATEGIES = {"OverloadShedder": OverloadShedder, "ThresholdShedder": ThresholdShedder,
                      "UniformLoadShedder": UniformLoadShedder, "AvgShedder": AvgShedder}
# doLoadShedding when selectBroker reads a broker the leader has no load data of (ModularLoadManagerImpl, 4.0.x)
LOOKUP_FAILED = ("placement picked {}, whose load data the leader does not hold: Pulsar's selectBroker fails there "
                 "(NullPointerException) and doLoadShedding makes none of the cycle's remaining unloads")
STRATEGIES = (*MODULAR_STRATEGIES, "TransferShedder")  # every strategy replayed: the modular ones and the extensible one
PLACEMENTS = {"LeastLongTermMessageRate": LeastLongTermMessageRate,
              "LeastResourceUsageWithWeight": LeastResourceUsageWithWeight,
              "RoundRobinBrokerSelector": RoundRobinBrokerSelector, "AvgShedder": None}


@dataclass
class ModularShedding:
    """One shedding strategy and its placement path, with the state a replay carries between cycles."""

    strategy: object
    placement: ModularPlacement
    seed: int = 0
    recently_unloaded: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    result_keys: JavaHashMap = field(default_factory=JavaHashMap)  # the strategy's result Multimap's key map

    @classmethod
    def named(cls, strategy: str, config: PulsarConfig, seed: int = 0, placement: str | None = None) -> "ModularShedding":
        """``strategy`` with the cluster's placement strategy (or ``placement``). AvgShedder places by its own
        plans only when it is the placement strategy too, as ``ModularLoadManagerImpl.initialize`` wires it."""
        if strategy not in MODULAR_STRATEGIES:
            raise ValueError(f"unknown shedding strategy {strategy!r}; known: {', '.join(MODULAR_STRATEGIES)}, TransferShedder")
        notes = []
        if placement is None:  # the cluster's: a class of its own (a plugin) cannot be replayed, nor stop the night
            placement = impl_name(config["loadBalancerLoadPlacementStrategy"])
            if placement not in PLACEMENTS:
                notes.append(f"placement strategy {config['loadBalancerLoadPlacementStrategy']!r} is not one of "
                             f"Pulsar's; replayed with LeastLongTermMessageRate")
                placement = "LeastLongTermMessageRate"
        if placement not in PLACEMENTS:
            raise ValueError(f"unknown placement strategy {placement!r}; known: {', '.join(PLACEMENTS)}")
        shedder = MODULAR_STRATEGIES[strategy]()
        if isinstance(shedder, AvgShedder):
            shedder.rng = random.Random(seed)
        if placement == "AvgShedder" and strategy == "AvgShedder":
            chosen = shedder
        elif placement == "AvgShedder":
            # what-if only: ModularLoadManagerImpl does not start so (the brokers fall back to SimpleLoadManagerImpl)
            notes.append(f"placement AvgShedder needs AvgShedder shedding; {strategy} is replayed with LeastLongTermMessageRate")
            chosen = LeastLongTermMessageRate(rng=random.Random(seed))
        elif placement == "RoundRobinBrokerSelector":
            chosen = RoundRobinBrokerSelector()
        else:
            chosen = PLACEMENTS[placement](rng=random.Random(seed))
        return cls(shedder, ModularPlacement(chosen), seed, notes=notes)

    def run_cycle(self, load: LoadData, config: PulsarConfig, now_ms: int, state: ClusterState | None = None) -> SheddingResult:
        out = SheddingResult(notes=list(self.notes))
        if not (config.get_bool("loadBalancerEnabled") and config.get_bool("loadBalancerSheddingEnabled")):
            out.notes.append("load balancing or shedding is disabled")
            return out
        state = state or ClusterState(list(load.brokers))
        if len(state.available) <= 1:
            out.notes.append("one broker or fewer: nothing to balance")
            return out
        for hook in (getattr(self.strategy, "on_active_brokers_change", None), self.placement.on_active_brokers_change):
            if hook:
                hook(state.available)
        self.placement.new_cycle()
        cutoff = grace_cutoff(now_ms, config.get_int("loadBalancerSheddingGracePeriodMinutes"))
        self.recently_unloaded = {b: t for b, t in self.recently_unloaded.items() if not t < cutoff}
        load = replace(load, recently_unloaded=dict(self.recently_unloaded))
        found = self.strategy.find_bundles_for_unloading(load, config)
        out.skips.extend(found.skips)
        out.notes.extend(found.notes)
        keys = JavaHashMap() if isinstance(self.strategy, AvgShedder) else self.result_keys  # AvgShedder's is fresh
        by_broker: dict[str, list] = {}
        for u in found.unloads:
            by_broker.setdefault(u.broker, []).append(u)
        excluded = set(config.get_list("loadBalancerSheddingExcludedNamespaces")) if config.release.excluded_namespaces else set()
        for broker in keys.order(by_broker):
            for u in by_broker[broker]:
                reason = self._blocked(u, load, config, state, excluded)
                if reason:
                    out.skips.append(Skip(u.broker, u.bundle, reason))
                    continue
                try:
                    dest = self.placement.select(u.bundle, load, config, state)
                except LookupFailed as exc:  # Pulsar's selectBroker throws out of doLoadShedding's loops
                    out.skips.append(Skip(u.broker, u.bundle, LOOKUP_FAILED.format(exc.args[0])))
                    return out
                if dest is None:
                    out.skips.append(Skip(u.broker, u.bundle, "placement found no destination"))
                    continue
                if dest == u.broker:
                    out.skips.append(Skip(u.broker, u.bundle, "placement chose the source broker again"))
                    continue
                out.unloads.append(replace(u, destination=dest))
                self.recently_unloaded[u.bundle] = now_ms
        return out

    def _blocked(self, u, load: LoadData, config: PulsarConfig, state: ClusterState, excluded: set[str]) -> str | None:
        if namespace_of(u.bundle) in excluded:
            return "namespace is in loadBalancerSheddingExcludedNamespaces"
        if not self.placement.should_policies_unload(u.bundle, u.broker, load, state):
            return "no other broker may own it under the namespace isolation policies"
        if not self.placement.should_anti_affinity_unload(u.bundle, u.broker, load, state):
            return "unloading would not improve the anti-affinity spread"
        return None


def apply_unloads(load: LoadData, unloads) -> LoadData:
    """The load after moving each unloaded bundle's current stats from its source to its destination (resource
    usage is left as reported; message totals move with the bundles). An unload between brokers this load does not
    hold is left out of it: TransferShedder decides on the extensible manager's ``BrokerLoadData``, which a snapshot
    can carry for a broker whose modular load report was not collected."""
    brokers = {b: {**r, "lastStats": dict(r.get("lastStats") or {}), "bundles": list(r.get("bundles") or [])}
               for b, r in load.brokers.items()}
    for u in unloads:
        if u.destination not in brokers or u.bundle not in brokers.get(u.broker, {}).get("lastStats", {}):
            continue
        stats = brokers[u.broker]["lastStats"].pop(u.bundle)
        brokers[u.broker]["bundles"].remove(u.bundle)
        brokers[u.destination]["lastStats"][u.bundle] = stats
        brokers[u.destination]["bundles"].append(u.bundle)
    for r in brokers.values():
        for k in ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut"):
            total = 0.0
            for s in r["lastStats"].values():
                total += float(s.get(k, 0.0))
            r[k] = total
    return LoadData(brokers, load.bundle_data, load.recently_unloaded)
