"""The extensible split trigger over a snapshot whose load holds for a number of cycles.

Every broker's ``SplitScheduler`` calls ``DefaultNamespaceBundleSplitStrategyImpl.findBundlesToSplit`` every
``loadBalancerSplitIntervalMinutes``; a snapshot is taken once an hour or so. Replaying one cycle per snapshot
made a bundle wait ``threshold + 1`` *snapshots* (four hours under the defaults) where Pulsar splits it after four
minutes, and a broker with more hot bundles than ``loadBalancerMaxNumberOfBundlesToSplitPerCycle`` showed the
ones past the cap as not hot at all (the cycle stops at the cap; they get no decision). Here the snapshot's stats
hold for ``cycles`` cycles, on every broker at once (:class:`ExtensibleSplitStrategy` per broker, hit counts
carried in it): a bundle a cycle selects is split, so it leaves its broker's stats for the cycles after, and its
namespace counts one bundle more from the next cycle on (``NamespaceService.getBundleCount``). The children are
not followed: their load is not in the snapshot (the next snapshot shows them).

Exact, not sampled, yet cheap: after the first cycle only the bundles that were hot (or hold a hit count) are
walked again, in the same order; a cycle that selects nothing while bundles wait for their hit count jumps ahead
to the cycle before the first of them passes it; and once nothing is selected and nothing waits, every further
cycle would repeat the last, so it jumps to the end. Decisions and hit counts are those of running every cycle
(``tests/test_split_held.py`` runs them all against it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lb_pipeline.algorithms.splits.common import SplitResult
from lb_pipeline.algorithms.splits.triggers import ExtensibleSplitStrategy, SplitDecision
from lb_pipeline.model.bundles import Bundle, split_bundle_name
from lb_pipeline.model.config import PulsarConfig

HIT_COUNT = "loadBalancerNamespaceBundleSplitConditionHitCountThreshold"
PER_CYCLE = "loadBalancerMaxNumberOfBundlesToSplitPerCycle"


@dataclass(frozen=True)
class HeldDecision:
    decision: SplitDecision
    cycle: int  # 1-based, within the window: the cycle that split the bundle, else the last


def held_window(strategies: dict[str, ExtensibleSplitStrategy], stats: Mapping[str, Mapping[str, Mapping]],
                bundle_counts: Mapping[str, int], boundary_for: Callable[[Bundle], SplitResult],
                config: PulsarConfig, cycles: int) -> dict[tuple[str, str], HeldDecision]:
    """``cycles`` (at least one) split cycles on every broker of ``stats`` (broker → its bundles' stats in its
    map's order) under ``config``: (broker, bundle) → the bundle's decision at the cycle that split it, else at
    the last cycle. ``strategies`` holds each broker's hit counts and is updated (a missing broker gets a new
    strategy)."""
    threshold, per_cycle = config.get_int(HIT_COUNT), config.get_int(PER_CYCLE)
    counts = dict(bundle_counts)
    live = {broker: dict(s) for broker, s in stats.items()}
    out: dict[tuple[str, str], HeldDecision] = {}
    cycle = 0
    cycles = max(1, cycles)
    while cycle < cycles:
        cycle += 1
        split_now: Counter[str] = Counter()
        decided: dict[str, list[str]] = {}
        for broker, mine in live.items():
            strategy = strategies.setdefault(broker, ExtensibleSplitStrategy(config))
            made = strategy.find_bundles_to_split(broker, mine, counts, boundary_for, config=config)
            for d in made:
                out[(broker, d.bundle)] = HeldDecision(d, cycle)
            chosen = {d.bundle for d in made if d.selected}
            split_now.update(split_bundle_name(name)[0] for name in chosen)
            stopped = per_cycle > 0 and len(chosen) == per_cycle  # the bundles after the cap got no decision
            keep = {d.bundle for d in made} | set(strategy.hit_count)
            live[broker] = {n: s for n, s in mine.items() if n not in chosen and (stopped or n in keep)}
            decided[broker] = [d.bundle for d in made if not d.selected]
        for namespace, n in split_now.items():
            counts[namespace] = counts.get(namespace, 0) + n
        if split_now:
            continue
        waiting = [strategies[b].hit_count[n] for b, names in decided.items() for n in names
                   if strategies[b].hit_count[n] <= threshold]
        # cycles in which every hot bundle only counts one more hit: all of them when nothing waits (each repeats
        # this one), else up to the cycle before the first waiting bundle passes the threshold; the window's last
        # cycle is always run or repeats this one
        jump = cycles - cycle if not waiting else min(threshold - max(waiting), cycles - cycle - 1)
        if jump > 0:
            for broker, names in decided.items():
                for n in names:
                    strategies[broker].hit_count[n] += jump
                    if not waiting:
                        out[(broker, n)] = HeldDecision(out[(broker, n)].decision, cycles)
            cycle += jump
    return out
