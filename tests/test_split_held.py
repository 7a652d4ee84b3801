"""The extensible split trigger over a snapshot whose load holds for many cycles (``algorithms/splits/held.py``)."""

import random
from collections import Counter

import pytest

from lb_pipeline.algorithms.splits import split_boundary
from lb_pipeline.algorithms.splits.held import held_window
from lb_pipeline.algorithms.splits.triggers import ExtensibleSplitStrategy
from lb_pipeline.model.bundles import split_bundle_name
from lb_pipeline.model.config import PulsarConfig
from tests.conformance.cases_triggers import extensible_trigger_case


def every_cycle(strategies, stats, counts, boundary_for, config, cycles):
    """The window the plain way: every cycle on every broker with its whole stats; a split bundle leaves them and
    its namespace counts one more bundle from the next cycle on."""
    counts, live, out = dict(counts), {b: dict(s) for b, s in stats.items()}, {}
    for cycle in range(1, max(1, cycles) + 1):
        split = Counter()
        for broker, mine in live.items():
            strategy = strategies.setdefault(broker, ExtensibleSplitStrategy(config))
            made = strategy.find_bundles_to_split(broker, mine, counts, boundary_for, config=config)
            out.update({(broker, d.bundle): (d, cycle) for d in made})
            chosen = {d.bundle for d in made if d.selected}
            split.update(split_bundle_name(n)[0] for n in chosen)
            live[broker] = {n: s for n, s in mine.items() if n not in chosen}
        for ns, n in split.items():
            counts[ns] = counts.get(ns, 0) + n
    return out


def _range(config):
    return lambda b: split_boundary("range_equally_divide", b, [], config)


def test_the_window_decides_and_counts_hits_as_running_every_cycle_would():
    """Random windows of 1 to 300 cycles over several brokers, hit counts carried in from an earlier window with
    other stats (bundles with fewer than two topics keep a stale count), thresholds up to 50, caps of none to 3."""
    seen = Counter()
    for i in range(400):
        rnd = random.Random(f"held-{i}")
        case = extensible_trigger_case(i)
        config = PulsarConfig({**case["config"], "defaultNamespaceBundleSplitAlgorithm": "range_equally_divide",
                               "loadBalancerNamespaceBundleSplitConditionHitCountThreshold": str(rnd.choice((-1, 0, 2, 5, 50))),
                               "loadBalancerMaxNumberOfBundlesToSplitPerCycle": str(rnd.choice((-1, 0, 1, 2, 3)))})
        stats = {f"b{k}": c["stats"] for k, c in enumerate(case["cycles"])}
        before = {f"b{k}": c["stats"] for k, c in enumerate(reversed(case["cycles"]))}
        counts = case["cycles"][0]["bundleCounts"]
        earlier, cycles = rnd.choice((1, 3)), rnd.choice((1, 2, 7, 60, 300))
        fast, slow = {}, {}
        held_window(fast, before, counts, _range(config), config, earlier)
        every_cycle(slow, before, counts, _range(config), config, earlier)
        got = held_window(fast, stats, counts, _range(config), config, cycles)
        want = every_cycle(slow, stats, counts, _range(config), config, cycles)
        assert {k: (h.decision, h.cycle) for k, h in got.items()} == want, case["name"]
        assert {b: s.hit_count for b, s in fast.items()} == {b: s.hit_count for b, s in slow.items()}, case["name"]
        seen.update(("split after the first cycle" if c > 1 else "split at once") if d.selected
                    else (d.skipped or "")[:20] for d, c in want.values())
    assert seen["split after the first cycle"] >= 50 and seen["split at once"] >= 50, seen
    assert sum(n for k, n in seen.items() if k.startswith("hot for")) >= 50, seen
    assert seen["namespace at loadBal"] >= 50, seen


def _stats(n):  # n bundles of t/ns over the default loadBalancerNamespaceBundleMaxMsgRate (30,000)
    return {f"t/ns/0x{k << 24:08x}_0x{k + 1 << 24:08x}": {"topics": 5, "msgRateIn": 40000.0} for k in range(n)}


def test_a_bundle_hot_for_an_hour_splits_after_the_hit_count_not_after_hours():
    config = PulsarConfig({})  # threshold 3: the fourth hot minute splits
    got = held_window({}, {"b0": _stats(1)}, {"t/ns": 1}, _range(config), config, 60)
    ((_, h),) = got.items()
    assert h.decision.selected and h.cycle == 4


def test_the_bundles_past_the_per_cycle_cap_split_in_the_cycles_after():
    """With 25 hot bundles on one broker and the default cap of 10, one cycle decides 10: the others got no decision
    at all (the what-if called them not hot); the cycles after split them."""
    config = PulsarConfig({})
    got = held_window({}, {"b0": _stats(25)}, {"t/ns": 25}, _range(config), config, 60)
    assert len(got) == 25 and all(h.decision.selected for h in got.values())
    assert sorted(Counter(h.cycle for h in got.values()).items()) == [(4, 10), (5, 10), (6, 5)]


def test_each_split_counts_toward_the_namespace_maximum_in_the_cycles_after():
    config = PulsarConfig({"loadBalancerNamespaceMaximumBundles": "20", "loadBalancerMaxNumberOfBundlesToSplitPerCycle": "2"})
    got = held_window({}, {"b0": _stats(10), "b1": _stats(10)}, {"t/ns": 17}, _range(config), config, 30)
    # each broker may split two a cycle, but 17 + 2 + 2 passes 20: the cycle after has room for none
    assert sum(h.decision.selected for h in got.values()) == 4
    assert {h.decision.skipped for h in got.values() if not h.decision.selected} == {
        "namespace at loadBalancerNamespaceMaximumBundles=20"}


@pytest.mark.parametrize("cycles", [1, 3])
def test_a_window_shorter_than_the_hit_count_carries_the_hits_to_the_next_snapshot(cycles):
    config = PulsarConfig({})
    strategies = {}
    first = held_window(strategies, {"b0": _stats(1)}, {"t/ns": 1}, _range(config), config, cycles)
    assert not any(h.decision.selected for h in first.values())
    second = held_window(strategies, {"b0": _stats(1)}, {"t/ns": 1}, _range(config), config, cycles)
    assert [h.cycle for h in second.values() if h.decision.selected] == ([] if cycles == 1 else [4 - cycles])
