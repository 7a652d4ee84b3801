"""``extensions/scheduler/TransferShedder`` with the ``UnloadScheduler`` bookkeeping around it.

Load is ``BrokerLoadData.weightedMaxEMA`` (1.0 = 100 %). The shedder triggers when the population std of the
live brokers' loads exceeds ``loadBalancerBrokerLoadTargetStd``, or the least loaded broker is underloaded, or
the most loaded is overloaded — on more than ``loadBalancerSheddingConditionHitCountThreshold`` consecutive
cycles. It then moves ``(maxLoad - minLoad) / 2`` worth of throughput from the most to the least loaded broker
(pairing inwards, at most ``loadBalancerMaxNumberOfBrokerSheddingPerCycle`` brokers), walking the source's top
bundles in their reported (ascending) order, optionally swapping bundles back, always leaving one bundle.

Reproduced quirks: the swapped-back throughput only counts when ``loadBalancerDebugModeEnabled`` is true; the min
broker advances only when something moved; std is recomputed virtually with the average fixed; brokers with
outdated data stay in the sorted list; a source broker still cooling down after an unload blocks the cycle.

When a snapshot has no ``BrokerLoadData``/top bundles (a modular cluster), :func:`derive_from_modular` builds the
equivalent from ``LocalBrokerData`` — what a user migrating to the extensible load manager wants to see — and
the result says which input was used.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from lb_pipeline.algorithms.shedding.common import SheddingResult, Skip, Unload, is_system_namespace, namespace_of
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.usage import Weights, max_resource_usage_with_weight_and_memory

NAME = "TransferShedder"


@dataclass
class ExtensibleLoad:
    brokers: dict[str, dict]  # broker → BrokerLoadData JSON
    top_bundles: dict[str, list[dict]]  # broker → [{"bundleName": …, "stats": NamespaceBundleStats}] ascending
    available: list[str]
    owners: dict[str, str] = field(default_factory=dict)  # bundle → owner (for the owner check), optional
    namespaces_with_policies: set[str] = field(default_factory=set)
    source: str = "BrokerLoadData"


def _tp(stats: Mapping) -> float:
    return float(stats.get("msgThroughputIn", 0.0)) + float(stats.get("msgThroughputOut", 0.0))


@dataclass
class DerivedLoadState:
    """EMAs a modular cluster does not publish, advanced once per snapshot (seeded with the first value)."""

    weighted_ema: dict[str, float] = field(default_factory=dict)
    throughput_ema: dict[str, float] = field(default_factory=dict)


def derive_from_modular(reports: Mapping[str, dict], config: PulsarConfig, now_ms: int,
                        state: DerivedLoadState | None = None, groups: Mapping[str, str | None] | None = None,
                        owners: Mapping[str, str] | None = None) -> ExtensibleLoad:
    """``BrokerLoadData`` and top-k bundles as the extensible reporter would publish them for these brokers."""
    state = state or DerivedLoadState()
    h = config.get_float("loadBalancerHistoryResourcePercentage")
    weights = Weights.from_config(config)
    k = config.get_int("loadBalancerMaxNumberOfBundlesInBundleLoadReport")
    with_policies = {ns for ns, g in (groups or {}).items() if g}
    brokers, tops = {}, {}
    for b, r in reports.items():
        weighted = max_resource_usage_with_weight_and_memory(r, weights)
        tp = _tp(r)
        state.weighted_ema[b] = weighted if b not in state.weighted_ema else state.weighted_ema[b] * h + (1 - h) * weighted
        state.throughput_ema[b] = tp if b not in state.throughput_ema else state.throughput_ema[b] * h + (1 - h) * tp
        brokers[b] = {**{x: r.get(x) for x in ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut")},
                      "msgThroughputIn": r.get("msgThroughputIn", 0.0), "msgThroughputOut": r.get("msgThroughputOut", 0.0),
                      "weightedMaxEMA": state.weighted_ema[b], "msgThroughputEMA": state.throughput_ema[b],
                      "updatedAt": now_ms}
        eligible = [(n, s) for n, s in (r.get("lastStats") or {}).items()
                    if not is_system_namespace(namespace_of(n)) and namespace_of(n) not in with_policies and _tp(s) > 0]
        eligible.sort(key=lambda x: _tp(x[1]))
        tops[b] = [{"bundleName": n, "stats": s} for n, s in (eligible[-k:] if k > 0 else eligible)]
    return ExtensibleLoad(brokers, tops, list(reports), dict(owners or {}), with_policies,
                          source="derived from the modular LocalBrokerData")


@dataclass
class TransferShedder:
    hit_count: int = 0
    recently_unloaded_bundles: dict[str, int] = field(default_factory=dict)
    recently_unloaded_brokers: dict[str, int] = field(default_factory=dict)
    name: str = NAME

    def run_cycle(self, load: ExtensibleLoad, config: PulsarConfig, now_ms: int,
                  transferable: Callable[[str, str, str | None], bool] | None = None) -> SheddingResult:
        """One ``UnloadScheduler`` run: purge the grace period, find unloads, record them as done."""
        out = SheddingResult(notes=[f"input: {load.source}"])
        if not (config.get_bool("loadBalancerEnabled") and config.get_bool("loadBalancerSheddingEnabled")):
            out.notes.append("load balancing or shedding is disabled")
            return out
        if len(load.available) <= 1:
            out.notes.append("one broker or fewer: nothing to balance")
            return out
        grace = config.get_int("loadBalancerSheddingGracePeriodMinutes") * 60_000
        self.recently_unloaded_bundles = {b: t for b, t in self.recently_unloaded_bundles.items() if now_ms - t <= grace}
        found = self.find_bundles_for_unloading(load, config, now_ms, transferable)
        for u in found.unloads:
            self.recently_unloaded_bundles[u.bundle] = now_ms
            self.recently_unloaded_brokers[u.broker] = now_ms
        found.notes[:0] = out.notes
        return found

    def find_bundles_for_unloading(self, load: ExtensibleLoad, config: PulsarConfig, now_ms: int,
                                   transferable: Callable[[str, str, str | None], bool] | None = None) -> SheddingResult:
        out = SheddingResult()
        c = config
        target_std = c.get_float("loadBalancerBrokerLoadTargetStd")
        overload = c.get_float("loadBalancerBrokerOverloadedThresholdPercentage") / 100.0
        transfer = c.get_bool("loadBalancerTransferEnabled")
        debug = c.get_bool("loadBalancerDebugModeEnabled")
        excluded = set(c.get_list("loadBalancerSheddingExcludedNamespaces"))
        allow_policies = c.get_bool("loadBalancerSheddingBundlesWithPoliciesEnabled")
        store = load.brokers

        def ld(b):
            return float(store[b].get("weightedMaxEMA", 1.0))

        def tp_ema(b):
            return float(store[b].get("msgThroughputEMA", 0.0))

        order = sorted(store, key=ld)  # stable
        max_idx, min_idx = len(order) - 1, 0
        total = sq = 0.0
        n, reason, missing = 0, None, set(load.available)
        for b, d in store.items():
            missing.discard(b)
            if now_ms - int(d.get("updatedAt", 0)) > c.get_int("loadBalancerBrokerLoadDataTTLInSeconds") * 1000:
                reason = "OutDatedData"
                continue
            if b in self.recently_unloaded_brokers:
                if int(d.get("updatedAt", 0)) - self.recently_unloaded_brokers[b] < c.get_int("loadBalanceSheddingDelayInSeconds") * 1000:
                    out.skips.append(Skip(b, None, "CoolDown: load data not yet refreshed since the last unload"))
                    return out
                del self.recently_unloaded_brokers[b]
            total += ld(b)
            sq += ld(b) ** 2
            n += 1
        if n == 0:
            out.skips.append(Skip("", None, reason or "NoBrokers"))
            return out
        if missing:
            out.skips.append(Skip(sorted(missing)[0], None, "NoLoadData: an available broker has no load data"))
            return out
        avg = total / n
        std = math.sqrt(max(0.0, sq / n - avg * avg))
        mult = min(0.5, max(0.0, target_std / 2))
        out.notes.append(f"load avg {avg:.3f}, std {std:.3f} (target {target_std})")

        def underloaded(b, top):
            return ld(b) < avg * mult or tp_ema(b) < tp_ema(order[top]) * mult

        def overloaded(b):
            return ld(b) > overload and ld(b) > avg + target_std

        if std > target_std or underloaded(order[min_idx], max_idx) or overloaded(order[max_idx]):
            self.hit_count += 1
        else:
            self.hit_count = 0
        if self.hit_count <= c.get_int("loadBalancerSheddingConditionHitCountThreshold"):
            out.skips.append(Skip("", None, f"HitCount: condition met on {self.hit_count} consecutive cycle(s)"))
            return out

        def movable(bundle, src, dst):
            ns = namespace_of(bundle)
            if ns in load.namespaces_with_policies and not allow_policies:
                return False
            if dst is not None and dst not in load.available:
                return False
            return transferable(bundle, src, dst) if transferable else True

        shed = empty = few = 0
        while shed < c.get_int("loadBalancerMaxNumberOfBrokerSheddingPerCycle") and min_idx < max_idx:
            if std > target_std:
                why = "Overloaded"
            elif underloaded(order[min_idx], max_idx):
                why = "Underloaded"
            elif overloaded(order[max_idx]):
                why = "Overloaded"
            else:
                break
            max_b, min_b = order[max_idx], order[min_idx]
            max_idx -= 1
            max_load, min_load = ld(max_b), ld(min_b)
            offload = (max_load - min_load) / 2
            max_tp, min_tp = _tp(store[max_b]), _tp(store[min_b])
            target = max_tp * offload / max_load if max_load else 0.0
            tops = load.top_bundles.get(max_b)
            if not tops:
                empty += 1
                continue
            if len(tops) == 1:
                few += 1
                continue
            min_iter = iter(load.top_bundles.get(min_b) or [])
            marked = gain = 0.0
            remaining = len(tops)
            chosen = []
            for e in tops:
                name = e["bundleName"]
                if load.owners and load.owners.get(name) not in (None, max_b):
                    continue
                if namespace_of(name) in excluded or name in self.recently_unloaded_bundles:
                    continue
                if not movable(name, max_b, min_b if transfer else None):
                    continue
                if remaining <= 1:
                    break
                tp = _tp(e["stats"])
                if tp == 0:
                    continue
                swap, back, back_tp = False, [], 0.0
                if marked - gain + tp > target:
                    if transfer:
                        max_new, min_new = max_tp - marked + gain - tp, min_tp + marked - gain + tp
                        for m in min_iter:
                            m_tp = _tp(m["stats"])
                            if not movable(m["bundleName"], min_b, max_b) or m_tp == 0:
                                continue
                            if max_new + m_tp < max_tp and min_new - m_tp < max_tp:
                                back.append(m)
                                max_new += m_tp
                                min_new -= m_tp
                                back_tp += m_tp
                                if min_new <= max_new and max_new < 0.75 * max_tp:
                                    swap = True
                                    break
                    if not swap:
                        break
                if swap:
                    for m in back:
                        chosen.append(Unload(NAME, min_b, m["bundleName"], why, "loadStd", std, target_std, target,
                                             "bytes/s", _tp(m["stats"]), destination=max_b))
                    if debug:  # Pulsar only subtracts the swapped-back traffic inside its debug-log block
                        gain += back_tp
                chosen.append(Unload(NAME, max_b, name, why, "loadStd", std, target_std, target, "bytes/s", tp,
                                     destination=min_b if transfer else None))
                marked += tp
                remaining -= 1
            if marked > 0:
                out.unloads.extend(chosen)
                adj = (marked - gain) * max_load / max_tp if max_tp else 0.0
                sq -= max_load ** 2 + min_load ** 2
                sq += max(0.0, max_load - adj) ** 2 + (min_load + adj) ** 2
                std = math.sqrt(abs(sq / n - avg * avg))
                shed += 1
                min_idx += 1
            else:
                few += 1
        if not out.unloads:
            out.skips.append(Skip("", None, "NoLoadData" if empty else "NoBundles" if few else "HitCount"))
        else:
            self.hit_count = 0
            out.notes.append(f"std after the planned moves {std:.3f}")
        return out
