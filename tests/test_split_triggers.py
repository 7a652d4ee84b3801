"""Split triggers: the modular leader's BundleSplitterTask and the extensible per-broker strategy."""

from lb_pipeline.algorithms.splits import range_equally_divide, specified_positions_divide
from lb_pipeline.algorithms.splits.common import SplitResult
from lb_pipeline.algorithms.splits.triggers import ExtensibleSplitStrategy, limit_notes, modular_split_candidates
from lb_pipeline.model.config import PulsarConfig

NS = "acme/orders"
B1, B2 = f"{NS}/0x00000000_0x40000000", f"{NS}/0x40000000_0x80000000"


def _stats(topics=10, rate=0.0, producers=1, consumers=1):
    return {"topics": topics, "msgRateIn": rate, "msgRateOut": 0.0, "msgThroughputIn": 0.0, "msgThroughputOut": 0.0,
            "producerCount": producers, "consumerCount": consumers}


def _long_term(rate):
    return {"longTermData": {"msgRateIn": rate, "msgRateOut": 0.0, "msgThroughputIn": 0.0, "msgThroughputOut": 0.0}}


def test_modular_uses_long_term_rates_not_the_last_report():
    brokers = {"b1": {"lastStats": {B1: _stats(rate=50_000.0), B2: _stats(rate=10.0)}}}
    decisions = modular_split_candidates(brokers, {B1: _long_term(100.0), B2: _long_term(40_000.0)}, {NS: 4})
    assert [(d.bundle, d.reason, d.selected) for d in decisions] == [(B2, "MsgRate", True)]
    assert decisions[0].triggered[0].describe() == "MsgRate: 40,000 msg/s > 30,000 (1.33x the limit)"


def test_modular_never_splits_a_bundle_with_fewer_than_two_topics():
    brokers = {"b1": {"lastStats": {B1: _stats(topics=1, producers=5000)}}}
    assert modular_split_candidates(brokers, {B1: _long_term(1e9)}, {NS: 4}) == []


def test_modular_counts_topics_and_sessions_from_the_report():
    brokers = {"b1": {"lastStats": {B1: _stats(topics=1001), B2: _stats(producers=600, consumers=401)}}}
    reasons = {d.bundle: d.reason for d in modular_split_candidates(brokers, {}, {NS: 4})}
    assert reasons == {B1: "Topics", B2: "Sessions"}


def test_modular_namespace_cap_counts_splits_chosen_in_the_same_cycle():
    brokers = {"b1": {"lastStats": {B1: _stats(topics=2000), B2: _stats(topics=2000)}}}
    decisions = modular_split_candidates(brokers, {}, {NS: 127})
    assert [d.selected for d in decisions] == [True, False]
    assert "loadBalancerNamespaceMaximumBundles=128" in decisions[1].skipped


def test_a_bandwidth_limit_of_2048_mb_or_more_wraps_javas_int_as_in_pulsar():
    """Both triggers compute ``Mbytes * 1048576`` as a Java ``int``: 2048 MB is -2048, 4096 MB 0, so every
    bundle with traffic (and two topics) is past the bandwidth limit; 2047 MB is what it says, and 100000 MB wraps to
    about 1,696 MiB."""
    traffic = {"longTermData": {"msgRateIn": 1.0, "msgRateOut": 0.0, "msgThroughputIn": 1024.0, "msgThroughputOut": 0.0}}
    brokers = {"b1": {"lastStats": {B1: _stats(topics=2)}}}
    for mbytes, hot in (("2047", False), ("2048", True), ("3000", True), ("4096", True), ("100000", False)):
        config = PulsarConfig({"loadBalancerNamespaceBundleMaxBandwidthMbytes": mbytes})
        decisions = modular_split_candidates(brokers, {B1: traffic}, {NS: 4}, config)
        assert [d.reason for d in decisions] == (["Bandwidth"] if hot else []), mbytes
        ext = ExtensibleSplitStrategy(config).find_bundles_to_split(
            "b1", {B1: {**_stats(topics=2), "msgThroughputIn": 1024.0}}, {NS: 4}, lambda b: None)
        assert [d.reason for d in ext] == (["Bandwidth"] if hot else []), mbytes
    config = PulsarConfig({"loadBalancerNamespaceBundleMaxBandwidthMbytes": "4096"})
    decisions = modular_split_candidates(brokers, {B1: traffic}, {NS: 4}, config)
    assert decisions[0].triggered[0].describe() == "Bandwidth: 0.0 MiB/s > 0.0 (a limit of 0 or less: any amount passes it)"
    assert limit_notes(config) == [
        "loadBalancerNamespaceBundleMaxBandwidthMbytes=4096: both split triggers multiply it by 1048576 as a Java int, "
        "which wraps to 0.0 MB/s, so Pulsar splits every bundle with traffic and two topics or more; set it to 2047 "
        "or less"]
    assert limit_notes(PulsarConfig({"loadBalancerNamespaceBundleMaxBandwidthMbytes": "2047"})) == []


def test_the_notes_say_when_pulsar_splits_with_another_algorithm_or_with_none():
    """``getNamespaceBundleSplitAlgorithmByName``: an unknown name falls back to range_equally_divide;
    specified_positions_divide gets no positions from an automatic split, which then fails."""
    assert limit_notes(PulsarConfig({"defaultNamespaceBundleSplitAlgorithm": "topic_count_equally_divide"})) == []
    assert limit_notes(PulsarConfig({"defaultNamespaceBundleSplitAlgorithm": "range_equaly_divide"})) == [
        "defaultNamespaceBundleSplitAlgorithm='range_equaly_divide' is not an algorithm Pulsar knows: it splits with "
        "range_equally_divide"]
    [note] = limit_notes(PulsarConfig({"defaultNamespaceBundleSplitAlgorithm": "specified_positions_divide"}))
    assert "hot bundles are never split" in note and "SplitBoundaries can't be empty" in note
    strategy = ExtensibleSplitStrategy(PulsarConfig({"loadBalancerNamespaceBundleSplitConditionHitCountThreshold": "0"}))
    [d] = strategy.find_bundles_to_split("b1", {B1: _stats(topics=2000)}, {NS: 4}, lambda b: specified_positions_divide(
        b, [], None))
    assert not d.selected and d.skipped == "Pulsar failed to get split boundaries: SplitBoundaries can't be empty"


def test_sessions_are_added_as_java_ints():
    """consumerCount + producerCount past 2^31 - 1 wraps negative in Pulsar: no session trigger."""
    brokers = {"b1": {"lastStats": {B1: _stats(topics=2, producers=2**31 - 1, consumers=1)}}}
    assert modular_split_candidates(brokers, {}, {NS: 4}) == []
    brokers = {"b1": {"lastStats": {B1: _stats(topics=2, producers=2**31 - 2, consumers=1)}}}
    assert [d.reason for d in modular_split_candidates(brokers, {}, {NS: 4})] == ["Sessions"]


def test_modular_split_disabled_by_config():
    brokers = {"b1": {"lastStats": {B1: _stats(topics=2000)}}}
    off = PulsarConfig({"loadBalancerAutoBundleSplitEnabled": "false"})
    assert modular_split_candidates(brokers, {}, {NS: 4}, off) == []


def _range(bundle):
    return range_equally_divide(bundle)


def test_extensible_splits_on_the_fourth_consecutive_hot_cycle():
    strategy = ExtensibleSplitStrategy()
    hot = {B1: _stats(rate=40_000.0)}
    for cycle in range(3):
        decisions = strategy.find_bundles_to_split("b1", hot, {NS: 4}, _range)
        assert not any(d.selected for d in decisions), cycle
    (decision,) = strategy.find_bundles_to_split("b1", hot, {NS: 4}, _range)
    assert decision.selected and decision.reason == "MsgRate"
    assert decision.boundary.boundaries == (0x20000000,)
    assert B1 not in strategy.hit_count


def test_extensible_cool_cycle_resets_the_hit_count():
    strategy = ExtensibleSplitStrategy()
    for stats in ({B1: _stats(rate=40_000.0)},) * 3 + ({B1: _stats(rate=1.0)},) + ({B1: _stats(rate=40_000.0)},):
        decisions = strategy.find_bundles_to_split("b1", stats, {NS: 4}, _range)
    assert strategy.hit_count[B1] == 1 and not any(d.selected for d in decisions)


def test_extensible_reason_priority_is_topics_first():
    strategy = ExtensibleSplitStrategy(PulsarConfig({"loadBalancerNamespaceBundleSplitConditionHitCountThreshold": "0"}))
    (d,) = strategy.find_bundles_to_split("b1", {B1: _stats(topics=5000, rate=1e6)}, {NS: 4}, _range)
    assert d.reason == "Topics" and d.selected


def test_extensible_cap_per_cycle_stops_the_loop():
    config = PulsarConfig({"loadBalancerNamespaceBundleSplitConditionHitCountThreshold": "0",
                           "loadBalancerMaxNumberOfBundlesToSplitPerCycle": "1"})
    strategy = ExtensibleSplitStrategy(config)
    decisions = strategy.find_bundles_to_split("b1", {B1: _stats(topics=5000), B2: _stats(topics=5000)}, {NS: 4}, _range)
    assert [d.bundle for d in decisions] == [B1]  # the order given: the broker's map's
    assert B2 not in strategy.hit_count  # never evaluated in that cycle


def test_the_simulation_walks_a_brokers_bundles_in_the_order_of_its_whole_map():
    """The simulation looks at the bundles worth a look; the map Pulsar walks holds every bundle of the broker, and
    its size sets the order: of these two, the whole map of 32 walks 0x00000000 first, a map of the two the other."""
    import numpy as np

    from lb_pipeline.model.javahash import concurrent_hash_map_order
    from lb_pipeline.simulation.splitting import Splits

    owned = [f"{NS}/0x{i * 0x08000000:08x}_0x{(i + 1) * 0x08000000:08x}" for i in range(32)]
    assert concurrent_hash_map_order([owned[2], owned[0]]) == [owned[2], owned[0]]
    load = type("Load", (), {"brokers": {"b1": {"lastStats": {n: _stats() for n in owned}}}})()
    mask = np.zeros(32, bool)
    mask[[0, 2]] = True
    assert list(Splits._lookup(load, np.zeros(32, int), ["b1"], mask, owned)["b1"]) == [owned[0], owned[2]]


def test_extensible_needs_exactly_one_boundary():
    strategy = ExtensibleSplitStrategy(PulsarConfig({"loadBalancerNamespaceBundleSplitConditionHitCountThreshold": "0"}))

    def two_cuts(bundle):
        return SplitResult("flow_or_qps_equally_divide", bundle, (bundle.lower + 10, bundle.lower + 20), "two")

    (d,) = strategy.find_bundles_to_split("b1", {B1: _stats(topics=5000)}, {NS: 4}, two_cuts)
    assert not d.selected and "exactly one boundary" in d.skipped


def test_extensible_skips_a_bundle_whose_neighbour_is_splitting():
    strategy = ExtensibleSplitStrategy(PulsarConfig({"loadBalancerNamespaceBundleSplitConditionHitCountThreshold": "0"}))
    (d,) = strategy.find_bundles_to_split("b1", {B2: _stats(topics=5000)}, {NS: 4}, _range,
                                          splitting={f"{NS}/0x40000000_0x60000000": "Splitting"})
    assert not d.selected and "splitting" in d.skipped
    # DefaultNamespaceBundleSplitStrategyImpl tests the namespace as a prefix of the name, without its "/"
    (d,) = ExtensibleSplitStrategy(strategy.config).find_bundles_to_split(
        "b1", {B2: _stats(topics=5000)}, {NS: 4}, _range, splitting={f"{NS}-eu/0x40000000_0x60000000": "Splitting"})
    assert not d.selected and "splitting" in d.skipped
    (d,) = ExtensibleSplitStrategy(strategy.config).find_bundles_to_split(
        "b1", {B2: _stats(topics=5000)}, {NS: 4}, _range, splitting={"acme/other/0x40000000_0x60000000": "Splitting"})
    assert d.selected


from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=60, deadline=None)
@given(st.integers(100, 128), st.lists(st.integers(0, 5000), min_size=1, max_size=20), st.integers(1, 128))
def test_splits_never_exceed_the_namespace_maximum(existing, topic_counts, maximum):
    config = PulsarConfig({"loadBalancerNamespaceMaximumBundles": str(maximum),
                           "loadBalancerNamespaceBundleSplitConditionHitCountThreshold": "0"})
    stats = {f"{NS}/0x{i:08x}_0x{i + 1000:08x}": _stats(topics=t) for i, t in enumerate(topic_counts)}
    modular = modular_split_candidates({"b1": {"lastStats": stats}}, {}, {NS: existing}, config)
    assert existing + sum(d.selected for d in modular) <= max(existing, maximum)
    extensible = ExtensibleSplitStrategy(config).find_bundles_to_split("b1", stats, {NS: existing}, _range)
    assert existing + sum(d.selected for d in extensible) <= max(existing, maximum)


def test_extensible_split_skips_a_bundle_whose_namespace_count_cannot_be_read():
    strategy = ExtensibleSplitStrategy(PulsarConfig({"loadBalancerNamespaceBundleSplitConditionHitCountThreshold": "0"}))
    (d,) = strategy.find_bundles_to_split("b1", {B1: _stats(topics=5000)}, {}, _range)  # no count for NS
    assert not d.selected and "could not be read" in d.skipped
    assert strategy.hit_count[B1] == 1  # the hit is kept, as Pulsar keeps it, so the next cycle tries again
