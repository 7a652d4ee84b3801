"""``extensions/scheduler/TransferShedder`` with the ``UnloadScheduler`` bookkeeping around it.

Load is ``BrokerLoadData.weightedMaxEMA`` (1.0 = 100 %). :func:`load_stats` is ``LoadStats.update``: average and
population std over the load data store (unrounded; a negative variance from rounding gives NaN, as in Java).
The shedder triggers when the std exceeds ``loadBalancerBrokerLoadTargetStd``, or the least loaded broker is
underloaded, or the most loaded is overloaded — on more than ``loadBalancerSheddingConditionHitCountThreshold``
consecutive cycles. It then moves ``(maxLoad - minLoad) / 2`` worth of throughput from the most to the least
loaded broker (pairing inwards, at most ``loadBalancerMaxNumberOfBrokerSheddingPerCycle`` brokers), walking the
source's top bundles in their reported (ascending) order, optionally swapping bundles back, always leaving one.

Reproduced quirks: the swapped-back throughput only counts when ``loadBalancerDebugModeEnabled`` is true; the min
broker advances only when something moved; std is recomputed after each move with the average fixed; brokers with
outdated data stay in the sorted list; a source broker still cooling down after an unload blocks the cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from lb_pipeline.algorithms.shedding import extensible_filters
from lb_pipeline.algorithms.shedding.common import SheddingResult, Skip, Unload, namespace_of
from lb_pipeline.algorithms.shedding.transfer_inputs import ExtensibleLoad, sheds_with_policies
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.java_values import grace_cutoff, java_long

NAME = "TransferShedder"


@dataclass
class LoadStats:
    """``TransferShedder.LoadStats`` after ``update``: ``skip`` names why the cycle stops (``OutDatedData`` is
    only a skip when no broker is left), else ``avg``/``std`` are Pulsar's unrounded figures (``reported_std`` is
    the std the cycle started with, as ``UnloadCounter`` records it; ``std`` follows the planned moves)."""

    sum: float = 0.0
    sq_sum: float = 0.0
    brokers: int = 0
    avg: float = 0.0
    std: float = 0.0
    skip: str | None = None
    reported_std: float = 0.0

    def offload(self, max_load: float, min_load: float, offload: float) -> None:
        self.sq_sum -= max_load * max_load + min_load * min_load
        maxd, mind = max(0.0, max_load - offload), min_load + offload
        self.sq_sum += maxd * maxd + mind * mind
        self.std = _sqrt(abs(_div(self.sq_sum, self.brokers) - self.avg * self.avg))


def _div(a: float, b: float) -> float:
    """Java double division: x/0 is ±inf (NaN for 0/0) instead of an exception."""
    if b == 0:
        return math.nan if a == 0 or a != a else math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else math.nan


def load_stats(load: ExtensibleLoad, recently_unloaded_brokers: dict[str, int], config: PulsarConfig, now_ms: int) -> LoadStats:
    """``LoadStats.update``: drops brokers whose data is older than ``loadBalancerBrokerLoadDataTTLInSeconds``,
    stops on a broker whose data predates ``loadBalanceSheddingDelayInSeconds`` after its last unload (and forgets
    unloads that are old enough), and requires load data from every available broker."""
    stats, reason = LoadStats(), None
    # Java long arithmetic (LoadStats.update: plain multiplications and differences, which wrap)
    ttl = java_long(config.get_int("loadBalancerBrokerLoadDataTTLInSeconds") * 1000)
    delay = java_long(config.get_int("loadBalanceSheddingDelayInSeconds") * 1000)
    missing = set(load.available)
    for broker, data in load.brokers.items():
        missing.discard(broker)
        updated = int(data.get("updatedAt", 0))
        if java_long(now_ms - updated) > ttl:
            reason = "OutDatedData"
            continue
        if broker in recently_unloaded_brokers:
            if java_long(updated - recently_unloaded_brokers[broker]) < delay:
                return LoadStats(skip="CoolDown")
            del recently_unloaded_brokers[broker]
        x = float(data.get("weightedMaxEMA", 1.0))
        stats.sum += x
        stats.sq_sum += x * x
        stats.brokers += 1
    if stats.brokers == 0:
        return LoadStats(skip=reason or "NoBrokers")
    if missing:
        return LoadStats(skip="NoLoadData")
    stats.avg = stats.sum / stats.brokers
    stats.std = stats.reported_std = _sqrt(stats.sq_sum / stats.brokers - stats.avg * stats.avg)
    return stats


def _order_key(x: float) -> tuple:
    return (x != x, x, math.copysign(1.0, x) if x == 0 else 0.0)  # Comparator.comparingDouble


@dataclass
class TransferShedder:
    hit_count: int = 0  # unloadConditionHitCount
    recently_unloaded_bundles: dict[str, int] = field(default_factory=dict)
    recently_unloaded_brokers: dict[str, int] = field(default_factory=dict)
    name: str = NAME

    def run_cycle(self, load: ExtensibleLoad, config: PulsarConfig, now_ms: int) -> SheddingResult:
        """One ``UnloadScheduler`` run: purge the grace period, find unloads, record them as done."""
        notes = [f"input: {load.source}"]
        if not (config.get_bool("loadBalancerEnabled") and config.get_bool("loadBalancerSheddingEnabled")):
            return SheddingResult(notes=notes + ["load balancing or shedding is disabled"])
        if len(load.available) <= 1:
            return SheddingResult(notes=notes + ["one broker or fewer: nothing to balance"])
        cutoff = grace_cutoff(now_ms, config.get_int("loadBalancerSheddingGracePeriodMinutes"))
        self.recently_unloaded_bundles = {b: t for b, t in self.recently_unloaded_bundles.items() if not t < cutoff}
        found = self.find_bundles_for_unloading(load, config, now_ms)
        for u in found.unloads:
            self.recently_unloaded_bundles[u.bundle] = now_ms
            self.recently_unloaded_brokers[u.broker] = now_ms
        found.notes[:0] = notes
        return found

    def find_bundles_for_unloading(self, load: ExtensibleLoad, config: PulsarConfig, now_ms: int) -> SheddingResult:
        out = SheddingResult()
        c = config
        store = load.brokers
        order = sorted(store, key=lambda b: _order_key(float(store[b].get("weightedMaxEMA", 1.0))))
        stats = load_stats(load, self.recently_unloaded_brokers, c, now_ms)
        out.load_stats = stats
        if stats.skip:
            out.skips.append(Skip("", None, stats.skip))
            return out
        out.notes.append(f"load avg {stats.avg!r}, std {stats.std!r} (target {c.get_float('loadBalancerBrokerLoadTargetStd')})")
        target_std = c.get_float("loadBalancerBrokerLoadTargetStd")
        overload = c.get_int("loadBalancerBrokerOverloadedThresholdPercentage") / 100.0
        transfer, debug = c.get_bool("loadBalancerTransferEnabled"), c.get_bool("loadBalancerDebugModeEnabled")
        mult = min(0.5, max(0.0, target_std / 2.0))
        max_idx, min_idx, shed = len(order) - 1, 0, 0

        def ld(b):
            return float(store[b].get("weightedMaxEMA", 1.0))

        def tp(d):
            return float(d.get("msgThroughputIn", 0.0)) + float(d.get("msgThroughputOut", 0.0))

        def underloaded(b):
            return ld(b) < stats.avg * mult or float(store[b].get("msgThroughputEMA", 0.0)) < \
                float(store[order[max_idx]].get("msgThroughputEMA", 0.0)) * mult

        def overloaded(b):
            return ld(b) > overload and ld(b) > stats.avg + target_std

        if stats.std > target_std or underloaded(order[min_idx]) or overloaded(order[max_idx]):
            self.hit_count += 1
        else:
            self.hit_count = 0
        if self.hit_count <= c.get_int("loadBalancerSheddingConditionHitCountThreshold"):
            out.skips.append(Skip("", None, "HitCount"))
            return out
        max_per_cycle = c.get_int("loadBalancerMaxNumberOfBrokerSheddingPerCycle")
        empty = few = 0
        decisions: dict[tuple, Unload] = {}  # a HashSet of decisions: equal ones collapse
        while shed < max_per_cycle and min_idx < max_idx:
            if stats.std > target_std:
                why = "Overloaded"
            elif underloaded(order[min_idx]):
                why = "Underloaded"
            elif overloaded(order[max_idx]):
                why = "Overloaded"
            else:
                break
            max_b, min_b = order[max_idx], order[min_idx]
            max_idx -= 1
            max_load, min_load = ld(max_b), ld(min_b)
            offload = (max_load - min_load) / 2.0
            max_tp, min_tp = tp(store[max_b]), tp(store[min_b])
            target = _div(max_tp * offload, max_load)
            tops = load.top_bundles.get(max_b)
            if not tops:
                empty += 1
                continue
            if len(tops) == 1:
                few += 1
                continue
            min_tops = load.top_bundles.get(min_b)
            min_iter = iter(min_tops) if min_tops is not None else None
            marked = gain = 0.0
            remaining = len(tops)
            for e in tops:
                name = e["bundleName"]
                if load.owners and load.owners.get(name) not in (None, max_b):
                    continue
                if name in self.recently_unloaded_bundles:
                    continue
                if not self._transferable(load, c, name, max_b, min_b):
                    continue
                if remaining <= 1:
                    break
                bundle_tp = tp(e["stats"])
                if bundle_tp == 0:
                    continue
                swap, back, back_tp = False, [], 0.0
                if marked - gain + bundle_tp > target:
                    if transfer and min_iter is not None:
                        max_new, min_new = max_tp - marked + gain - bundle_tp, min_tp + marked - gain + bundle_tp
                        for m in min_iter:
                            m_tp = tp(m["stats"])
                            if not self._transferable(load, c, m["bundleName"], min_b, max_b) or m_tp == 0:
                                continue
                            if not (max_new + m_tp < max_tp and min_new - m_tp < max_tp):
                                continue
                            back.append(m)
                            max_new, min_new, back_tp = max_new + m_tp, min_new - m_tp, back_tp + m_tp
                            if min_new <= max_new and max_new < max_tp * 0.75:
                                swap = True
                                break
                    if not swap:
                        break
                if transfer:
                    if swap:
                        for m in back:
                            # Pulsar picks these without looking at recentlyUnloadedBundles (only the max
                            # broker's bundles are checked): a bundle can come back inside the grace period
                            u = Unload(NAME, min_b, m["bundleName"], why, "loadStd", stats.std, target_std, target,
                                       "bytes/s", tp(m["stats"]), destination=max_b, swap=True)
                            decisions.setdefault((u.broker, u.bundle, u.destination, why), u)
                        if debug:  # Pulsar only adds the swapped-back traffic inside its debug-log block
                            gain += back_tp
                u = Unload(NAME, max_b, name, why, "loadStd", stats.std, target_std, target, "bytes/s", bundle_tp,
                           destination=min_b if transfer else None)
                decisions.setdefault((u.broker, u.bundle, u.destination, why), u)
                marked += bundle_tp
                remaining -= 1
            if marked > 0:
                stats.offload(max_load, min_load, _div((marked - gain) * max_load, max_tp))
                shed += 1
                min_idx += 1
                continue
            few += 1
        out.unloads = list(decisions.values())
        if not out.unloads:
            out.skips.append(Skip("", None, "NoLoadData" if empty else "NoBundles" if few else "HitCount"))
        else:
            self.hit_count = 0
            out.notes.append(f"std after the planned moves {stats.std!r}")
        return out

    @staticmethod
    def _transferable(load: ExtensibleLoad, config: PulsarConfig, bundle: str, src: str, dst: str) -> bool:
        """``isTransferable``: the policies gate; then the broker filter pipeline over the available brokers
        (``extensible_filters``): the destination must be among those it keeps, and some broker other than the
        source must remain. Without cluster policies (``policies_known`` false: Pulsar's unit-test mode, no
        PulsarService) everything is transferable."""
        if not load.policies_known:
            return True
        if not sheds_with_policies(namespace_of(bundle), load.namespaces_with_policies, config):
            return False
        try:
            kept = extensible_filters.candidates(load, config, bundle)
        except extensible_filters.FilterFailed:
            return False
        if dst not in kept:
            return False
        others = kept - {src}
        return dst in others if config.get_bool("loadBalancerTransferEnabled") else bool(others)
