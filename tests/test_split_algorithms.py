"""Split algorithms against the docs' worked examples (with the code's answers) and invariants."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lb_pipeline.algorithms.splits import SplitRefused, automatic_algorithm, split_boundary
from lb_pipeline.algorithms.splits.common import MIB, TopicLoad
from lb_pipeline.algorithms.splits.flow_or_qps_equally_divide import flow_or_qps_equally_divide
from lb_pipeline.algorithms.splits.range_equally_divide import range_equally_divide
from lb_pipeline.algorithms.splits.specified_positions_divide import specified_positions_divide
from lb_pipeline.algorithms.splits.topic_count_equally_divide import topic_count_equally_divide
from lb_pipeline.model.bundles import Bundle, NamespaceBundles
from lb_pipeline.model.config import PulsarConfig

HALF = Bundle("t/ns", 0x00000000, 0x80000000)
DOC_HASHES = [0x10000000, 0x15000000, 0x24000000, 0x39000000, 0x58000000, 0x76000000]
DOC_TOPICS = [TopicLoad(f"t{i + 1}", h, msg_rate=100.0 * (i + 1), throughput=10.0 * (i + 1) * MIB)
              for i, h in enumerate(DOC_HASHES)]


def test_range_equally_divide_docs_example():
    assert range_equally_divide(HALF).boundaries == (0x40000000,)


@pytest.mark.parametrize("lower, upper, cut", [(0, 0xFFFFFFFF, 0x7FFFFFFF), (10, 0xFFFFFFFF, 0x80000004)])
def test_range_equally_divide_uses_integer_division(lower, upper, cut):
    assert range_equally_divide(Bundle("t/ns", lower, upper)).boundaries == (cut,)


def test_topic_count_docs_example_gives_the_codes_0x4d000000_not_the_docs_0x50000000():
    hashes = [0x10000000, 0x20000000, 0x35000000, 0x65000000, 0x70000000, 0x75000000]
    result = topic_count_equally_divide(HALF, hashes)
    assert result.boundaries == (0x4D000000,)
    left = [h for h in hashes if h < 0x4D000000]
    assert len(left) == 3


def test_topic_count_needs_two_topics():
    assert topic_count_equally_divide(HALF, [0x100]).boundaries is None
    assert "at least 2" in topic_count_equally_divide(HALF, []).reason


def test_topic_count_adjacent_middle_hashes_put_the_start_topic_on_the_right():
    result = topic_count_equally_divide(HALF, [0x100, 0x1000, 0x1001, 0x5000])
    assert result.boundaries == (0x1000,)
    assert [c.contains_hash(0x1000) for c in result.children] == [False, True]


def test_topic_count_all_on_the_lower_bound_cannot_split():
    bundle = Bundle("t/ns", 0x1000, 0x2000)
    assert topic_count_equally_divide(bundle, [0x1000, 0x1000]).boundaries is None


def test_specified_positions_docs_example():
    bundle = Bundle("t/ns", 0, 0x40000000)
    result = specified_positions_divide(bundle, [0x30000000, 0x35000000], [0x33000000])
    assert result.boundaries == (0x33000000,)


def test_specified_positions_refuses_empty_and_drops_outside_positions():
    bundle = Bundle("t/ns", 0, 0x40000000)
    with pytest.raises(SplitRefused, match="can't be empty"):
        specified_positions_divide(bundle, [1, 2], [])
    assert specified_positions_divide(bundle, [1, 2], [0, 0x40000000]).boundaries is None
    assert specified_positions_divide(bundle, [1], [0x100]).boundaries is None
    assert specified_positions_divide(bundle, [1, 2], [0x200, 0x100, 0x50000000]).boundaries == (0x100, 0x200)


@pytest.mark.parametrize("max_rate, max_mb, expected", [
    (450, 200, (0x1C800001, 0x2E800001, 0x48800001, 0x67000001)),  # docs: 0x19500000, 31500000, 48500000, 67000000
    (1900, 90, (0x2E800001, 0x67000001)),  # docs: 0x31500000, 0x67000000
    (1100, 110, (0x48800001,)),  # docs: 0x48500000
])
def test_flow_or_qps_docs_cases_give_the_codes_positions(max_rate, max_mb, expected):
    result = flow_or_qps_equally_divide(HALF, DOC_TOPICS, max_rate, max_mb, 10)
    assert result.boundaries == expected


def test_flow_or_qps_does_not_split_within_the_difference_threshold():
    topics = [TopicLoad("a", 0x100, 500.0, 0.0), TopicLoad("b", 0x200, 500.0, 0.0)]
    assert flow_or_qps_equally_divide(HALF, topics, 950, 100, 10).boundaries is None  # 1000 < 950 * 1.1
    assert flow_or_qps_equally_divide(HALF, topics, 900, 100, 10).boundaries == (0x100 + 0x80 + 1,)


def test_flow_or_qps_duplicate_hashes_give_a_split_pulsar_rejects():
    topics = [TopicLoad("a", 0x100, 1.0, 0.0), TopicLoad("b", 0x100, 1501.0, 0.0), TopicLoad("c", 0x101, 1799.0, 0.0)]
    result = flow_or_qps_equally_divide(HALF, topics, 3000, 100, 10)
    assert result.boundaries == (0x101, 0x101)
    assert not result.splits and "duplicate" in result.failure


def test_flow_or_qps_ignores_idle_topics():
    topics = [TopicLoad("a", 0x100, 5000.0, 0.0), TopicLoad("idle", 0x150, 0.0, 0.0), TopicLoad("b", 0x200, 5000.0, 0.0)]
    assert flow_or_qps_equally_divide(HALF, topics, 1000, 100, 10).boundaries == (0x181,)
    assert flow_or_qps_equally_divide(HALF, topics[:2], 1000, 100, 10).boundaries is None


def test_dispatcher_uses_the_configs_limits_and_refuses_unknown_names():
    config = PulsarConfig({"loadBalancerNamespaceBundleMaxMsgRate": "450",
                           "loadBalancerNamespaceBundleMaxBandwidthMbytes": "200"})
    assert len(split_boundary("flow_or_qps_equally_divide", HALF, DOC_TOPICS, config).boundaries) == 4
    with pytest.raises(SplitRefused, match="unknown split algorithm"):
        split_boundary("half", HALF, DOC_TOPICS)


def test_topic_load_from_pulsar_topic_stats():
    t = TopicLoad.from_stats("persistent://public/default/my-topic",
                             {"msgRateIn": 10.0, "msgRateOut": 20.0, "msgThroughputIn": 1.0e7, "msgThroughputOut": 5.0})
    assert (t.hash, t.msg_rate, t.throughput) == (0x2BAD45F7, 30.0, 1.0e7 + 5.0)


_topics = st.lists(st.tuples(st.integers(0, 0xFFFFFFFF), st.floats(0, 5000), st.floats(0, 50 * MIB)), min_size=0,
                   max_size=40)


@given(_topics, st.sampled_from(["range_equally_divide", "topic_count_equally_divide", "flow_or_qps_equally_divide"]))
def test_children_tile_the_parent_and_hold_every_topic_once(raw, algorithm):
    layout = NamespaceBundles.with_default("t/ns", 4)
    parent = layout.bundles[1]
    topics = [TopicLoad(f"t{i}", parent.lower + h % (parent.upper - parent.lower), r, b) for i, (h, r, b) in enumerate(raw)]
    config = PulsarConfig({"loadBalancerNamespaceBundleMaxMsgRate": "3000",
                           "loadBalancerNamespaceBundleMaxBandwidthMbytes": "20"})
    result = split_boundary(algorithm, parent, topics, config)
    if result.boundaries and not result.splits:  # Pulsar's factory rejects these boundaries; so do we
        with pytest.raises(ValueError):
            layout.split(parent, boundaries=list(result.boundaries))
        return
    if not result.splits:
        return
    assert all(parent.lower < b < parent.upper for b in result.boundaries)
    children = result.children
    assert children[0].lower == parent.lower and children[-1].upper == parent.upper
    assert all(a.upper == b.lower and a.upper > a.lower for a, b in zip(children, children[1:]))
    for t in topics:
        assert sum(c.contains_hash(t.hash) for c in children) == 1
    new_layout, _ = layout.split(parent, boundaries=list(result.boundaries))
    assert len(new_layout) == len(layout) + len(result.boundaries)


@pytest.mark.parametrize("name, used", [("topic_count_equally_divide", "topic_count_equally_divide"),
                                        ("our_own_divide", "range_equally_divide"), ("", "range_equally_divide")])
def test_an_automatic_split_falls_back_to_range_equally_divide_as_pulsar_does(name, used):
    assert automatic_algorithm(PulsarConfig({"defaultNamespaceBundleSplitAlgorithm": name})) == used
