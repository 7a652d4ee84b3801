"""Both split triggers agree with Pulsar 4.0.8's own classes, run on random inputs by harnesses of ours on the
oracle's class path (``tests/conformance/java``; the classes take a live ``PulsarService``, the oracle has no family
for them): the bundles split, their reasons and, for the extensible trigger, the children, cycle after cycle."""

from __future__ import annotations

from collections import Counter

from lb_pipeline.algorithms.splits import TopicLoad, automatic_algorithm, split_boundary
from lb_pipeline.algorithms.splits.triggers import ExtensibleSplitStrategy, modular_split_candidates
from lb_pipeline.model.bundles import format_range
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.javahash import concurrent_hash_map_order
from tests.conformance.cases_triggers import extensible_trigger_case, trigger_case
from tests.conformance.stored import answers, regenerate

# why a hot bundle was not split, each seen at least ten times: text of the skip → kind
SKIPS = {"must exceed": "hit count", "loadBalancerNamespaceMaximumBundles": "namespace full",
         "could not be read": "count unreadable", "neighbour": "neighbour splitting",
         "exactly one boundary": "no single boundary", "failed to get split boundaries": "algorithm failed"}

def test_the_modular_split_trigger_picks_what_pulsars_bundle_splitter_task_picks():
    """``BundleSplitterTask.findBundlesToSplit`` run by ``java/SplitTriggers.java``: the same bundles, from the same
    brokers, where limits are met exactly, the bandwidth limit wraps Java's ``int`` (2048 MB and more), sessions
    added pass it, and hot bundles compete for a namespace's last slots (the brokers' order decides)."""
    picked = capped = wrapped = 0
    for row in answers("triggers-4.0.8"):
        case, theirs = regenerate(row, trigger_case), row["pulsar"]
        assert "error" not in theirs, (row["case"], theirs)
        decisions = modular_split_candidates(case["brokers"], case["bundleData"], case["bundleCounts"],
                                             PulsarConfig(case["config"]))
        mine = [(d.bundle, d.broker) for d in decisions if d.selected]
        assert sorted(mine) == sorted(map(tuple, theirs["cycles"][0])), row["case"]
        picked += len(mine)
        capped += any(not d.selected for d in decisions)
        wrapped += bool(mine) and int(case["config"]["loadBalancerNamespaceBundleMaxBandwidthMbytes"]) >= 2048
    assert picked >= 300 and capped >= 50 and wrapped >= 50, (picked, capped, wrapped)



def test_the_extensible_split_trigger_splits_what_pulsars_default_strategy_splits():
    """``DefaultNamespaceBundleSplitStrategyImpl.findBundlesToSplit`` behind ``SplitScheduler``'s gate, run by
    ``java/SplitTriggers.java`` on one broker for one to four cycles: the same bundles split for the same
    reason into the same children, where hit counts carry over between cycles, the broker's stats are walked in its
    map's order (which bundles get the cycle's and a namespace's last slots), a splitting neighbour's
    name starts with the namespace, a bundle is too narrow, its namespace's bundle count cannot be read, and the
    algorithm gives no single boundary or fails (``specified_positions_divide`` has no positions here)."""
    seen = Counter()
    for row in answers("extensible-triggers-4.0.8"):
        case, theirs = regenerate(row, extensible_trigger_case), row["pulsar"]
        assert "error" not in theirs, (row["case"], theirs)
        config = PulsarConfig(case["config"])
        loads = {b: [TopicLoad.from_stats(t, {}) for t in names] for b, names in case["topics"].items()}
        strategy = ExtensibleSplitStrategy(config)
        for cycle, pulsar in zip(case["cycles"], theirs["cycles"], strict=True):
            stats = {name: cycle["stats"][name] for name in concurrent_hash_map_order(cycle["stats"])}  # the harness's
            decisions = strategy.find_bundles_to_split(  # map is a fresh ConcurrentHashMap, walked in its order
                case["broker"], stats, cycle["bundleCounts"],
                lambda b: split_boundary(automatic_algorithm(config), b, loads.get(b.name, []), config),
                splitting={name: name.rsplit("/", 1)[1] for name in cycle["splitting"]})
            mine = [{"bundle": d.bundle, "label": "Success", "reason": d.reason,
                     "children": [format_range(c.lower, c.upper) for c in d.boundary.children]}
                    for d in sorted(decisions, key=lambda d: d.bundle) if d.selected]
            assert mine == pulsar, (row["case"], cycle)
            seen["split"] += len(mine)
            seen.update(kind for d in decisions if not d.selected for text, kind in SKIPS.items() if text in d.skipped)
    assert seen["split"] >= 300 and len(seen) == 1 + len(SKIPS) and min(seen.values()) >= 10, seen
