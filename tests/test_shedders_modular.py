"""Modular shedders against the worked examples of the seeds and the spec (pulsar-modular-shedders.md)."""

import pytest

from lb_pipeline.algorithms.shedding.avg_shedder import AvgShedder
from lb_pipeline.algorithms.shedding.common import MIB, LoadData
from lb_pipeline.algorithms.shedding.driver import ModularShedding
from lb_pipeline.algorithms.shedding.overload_shedder import OverloadShedder
from lb_pipeline.algorithms.shedding.threshold_shedder import ThresholdShedder
from lb_pipeline.algorithms.shedding.uniform_load_shedder import UniformLoadShedder
from lb_pipeline.model.config import MODULAR_LOAD_MANAGER, PulsarConfig
from lb_pipeline.model.java_values import int_cast


def broker(cpu_pct, bundles=(), rate=0.0, throughput=0.0):
    """A LocalBrokerData whose weighted max is ``cpu_pct`` (CPU limit 100) owning ``bundles``, written by a broker
    running the modular load manager (whose class name every report since Pulsar 2.10 carries)."""
    return {"loadManagerClassName": MODULAR_LOAD_MANAGER,
            "cpu": {"usage": float(cpu_pct), "limit": 100.0}, "memory": {"usage": 0.0, "limit": 100.0},
            "directMemory": {"usage": 0.0, "limit": 100.0}, "bandwidthIn": {"usage": 0.0, "limit": 100.0},
            "bandwidthOut": {"usage": 0.0, "limit": 100.0}, "msgRateIn": rate, "msgRateOut": 0.0,
            "msgThroughputIn": throughput, "msgThroughputOut": 0.0, "bundles": list(bundles),
            "lastStats": {b: {"msgRateIn": 0.0, "msgRateOut": 0.0, "msgThroughputIn": 0.0, "msgThroughputOut": 0.0}
                          for b in bundles}}


def bdata(rate=0.0, throughput=0.0):
    return {"shortTermData": {"msgRateIn": rate, "msgRateOut": 0.0, "msgThroughputIn": throughput, "msgThroughputOut": 0.0},
            "longTermData": {"msgRateIn": rate, "msgRateOut": 0.0, "msgThroughputIn": throughput, "msgThroughputOut": 0.0}}


def ns_bundles(prefix, n):
    return [f"t/{prefix}/0x{i:08x}_0x{i + 1:08x}" for i in range(n)]


def test_threshold_docs_example_40_10_10_sheds_only_broker1():
    b1 = ns_bundles("a", 4)
    load = LoadData({"broker1": broker(40, b1, throughput=200 * MIB), "broker2": broker(10, ns_bundles("b", 2)),
                     "broker3": broker(10, ns_bundles("c", 2))},
                    {b: bdata(throughput=t * MIB) for b, t in zip(b1, (25, 10, 5, 1))})
    result = ThresholdShedder().find_bundles_for_unloading(load, PulsarConfig())
    assert {u.broker for u in result.unloads} == {"broker1"}
    # the code sheds (0.40 - 0.20 - 0.10 + 0.05) = 15 % of 200 MiB/s = 30 MiB/s: bundles of 25 and 10 MiB/s
    assert [u.bundle for u in result.unloads] == b1[:2]
    assert result.unloads[0].amount == pytest.approx(30 * MIB)


def test_threshold_needs_the_minimum_throughput():
    load = LoadData({"b1": broker(40, ns_bundles("a", 2), throughput=50 * MIB), "b2": broker(10), "b3": broker(10)},
                    {b: bdata(throughput=MIB) for b in ns_bundles("a", 2)})
    result = ThresholdShedder().find_bundles_for_unloading(load, PulsarConfig())
    assert not result.unloads and "below the 10 MB minimum" in result.skips[0].reason  # 15 % of 50 = 7.5 MiB/s


def test_threshold_history_smooths_a_sudden_spike():
    shedder, config = ThresholdShedder(), PulsarConfig()
    b1 = ns_bundles("a", 3)
    data = {b: bdata(throughput=30 * MIB) for b in b1}
    calm = LoadData({"b1": broker(10, b1, throughput=200 * MIB), "b2": broker(10), "b3": broker(10)}, data)
    hot = LoadData({"b1": broker(60, b1, throughput=200 * MIB), "b2": broker(10), "b3": broker(10)}, data)
    assert not shedder.find_bundles_for_unloading(calm, config).unloads
    first_shed = next(cycle for cycle in range(1, 30) if shedder.find_bundles_for_unloading(hot, config).unloads)
    assert first_shed > 1  # the EMA (history weight 0.9) needs several cycles above the threshold
    assert 0.1 < shedder.history["b1"] < 0.6


def test_threshold_lower_boundary_sheds_half_the_threshold():
    config = PulsarConfig({"lowerBoundarySheddingEnabled": "true"})
    b1 = ns_bundles("a", 3)
    load = LoadData({"b1": broker(24, b1, throughput=200 * MIB), "b2": broker(20, ns_bundles("b", 2)), "b3": broker(0)},
                    {b: bdata(throughput=t * MIB) for b, t in zip(b1, (8, 4, 2))})
    result = ThresholdShedder().find_bundles_for_unloading(load, config)
    assert {u.reason for u in result.unloads} == {"LowerBoundary"}
    assert result.unloads[0].amount == pytest.approx(10 * MIB)  # 200 MiB/s x 0.1 x 0.5 equals the minimum


def test_overload_over_85_percent_sheds_largest_first_at_least_one():
    b1 = ns_bundles("a", 3)
    load = LoadData({"b1": broker(95, b1, throughput=100 * MIB), "b2": broker(85, ns_bundles("b", 2), throughput=10.0),
                     "b3": broker(84.9, ns_bundles("c", 2)), "b4": broker(99, ns_bundles("d", 1))},
                    {**{b: bdata(throughput=t * MIB) for b, t in zip(b1, (3, 20, 1))},
                     **{b: bdata(throughput=1.0) for b in ns_bundles("b", 2)}})
    result = OverloadShedder().find_bundles_for_unloading(load, PulsarConfig())
    by_broker = {}
    for u in result.unloads:
        by_broker.setdefault(u.broker, []).append(u.bundle)
    assert by_broker["b1"] == [b1[1]]  # 15 % of 100 MiB/s = 15 MiB/s: the 20 MiB/s bundle covers it
    assert len(by_broker["b2"]) == 1  # exactly at the threshold counts; a tiny need still sheds one bundle
    assert "b3" not in by_broker and "b4" not in by_broker  # below threshold; single bundle
    assert any("owns 1 bundle" in s.reason for s in result.skips)


def _uniform_load(rates, throughputs, n=20):
    brokers = {f"b{i}": broker(10, ns_bundles(f"n{i}", n), rate=r, throughput=t) for i, (r, t) in enumerate(zip(rates, throughputs))}
    data = {b: bdata(rate=r / n, throughput=t / n) for i, (r, t) in enumerate(zip(rates, throughputs))
            for b in ns_bundles(f"n{i}", n)}
    return LoadData(brokers, data)


@pytest.mark.parametrize("profile, taken", [("pulsar-4.0", [2500.0, 2500.0]), ("pulsar-master-2026", [2500.0])])
def test_uniform_50k_vs_30k_msg_rate_triggers_at_66_percent(profile, taken):
    result = UniformLoadShedder().find_bundles_for_unloading(_uniform_load([50_000, 30_000], [1e6, 1e6]),
                                                             PulsarConfig({"maxUnloadPercentage": "0.2"}, profile))
    assert result.unloads and result.unloads[0].reason == "MsgRateDifference"
    assert result.unloads[0].value == pytest.approx(66.666, rel=1e-3)
    assert result.unloads[0].amount == 4000  # int((50000 - 30000) * 0.2)
    # 1500 msg/s are left after the first bundle: 4.0.x still takes a 2500 one (<= 1500 + 1000), master does not
    assert [u.bundle_load for u in result.unloads] == taken
    assert all(u.broker == "b0" for u in result.unloads)


def test_uniform_450mb_vs_100mb_throughput_ratio_triggers():
    result = UniformLoadShedder().find_bundles_for_unloading(_uniform_load([1000, 1000], [450 * MIB, 100 * MIB]), PulsarConfig())
    assert result.unloads and result.unloads[0].reason == "ThroughputRatio"
    assert result.unloads[0].value == pytest.approx(4.5)


def test_uniform_exactly_4x_does_not_trigger():
    assert not UniformLoadShedder().find_bundles_for_unloading(
        _uniform_load([1000, 1000], [400 * MIB, 100 * MIB]), PulsarConfig()).unloads


def test_int_cast_truncates_toward_zero_and_saturates_as_javas_narrowing_does():
    """JLS 5.1.3: NaN is 0, infinities and out-of-range values are Integer.MIN_VALUE or MAX_VALUE."""
    inf = float("inf")
    assert (int_cast(2.9), int_cast(-2.9), int_cast(1e12), int_cast(-1e300)) == (2, -2, 2**31 - 1, -(2**31))
    assert (int_cast(inf), int_cast(-inf), int_cast(float("nan"))) == (2**31 - 1, -(2**31), 0)


def test_avgshedder_of_4_0_7_sorts_infinite_scores_as_java_does():
    """A resource weight of 1e308 makes the scores of busy brokers infinite and an idle one's 0: 4.0.7's ``(int) (a -
    b)`` comparator saturates (infinity minus a number is Integer.MAX_VALUE), where the replay raised OverflowError
    (a fuzz run against the 4.0.7 oracle: 9 of 800 cases). Ordered so, it sorts as 4.0.8's ``comparingDouble``."""
    runs = {}
    for profile in ("pulsar-4.0.7", "pulsar-4.0"):
        config = PulsarConfig({"loadBalancerCPUResourceWeight": "1e308", "minUnloadMessage": "100"}, profile)
        shedder, (load, _) = AvgShedder(), _avg_load()
        load.brokers["s20"]["cpu"]["usage"] = 0.0  # a finite score among infinite ones
        runs[profile] = [[(u.broker, u.bundle) for u in shedder.find_bundles_for_unloading(load, config).unloads]
                         for _ in range(3)]
    assert runs["pulsar-4.0.7"] == runs["pulsar-4.0"]


SCORES = {"s20": 20, "s30": 30, "s52": 52, "s70": 70, "s80": 80}


def _avg_load():
    rates = {"s20": 500.0, "s30": 600.0, "s52": 700.0, "s70": 800.0, "s80": 1000.0}
    hot = ns_bundles("hot", 2)
    brokers = {b: broker(s, hot if b == "s80" else ns_bundles(b, 2), rate=rates[b]) for b, s in SCORES.items()}
    data = {hot[0]: bdata(rate=750.0), hot[1]: bdata(rate=250.0)}
    return LoadData(brokers, data), hot


def test_avg_docs_example_moves_nothing_with_the_default_minimum():
    shedder, (load, _) = AvgShedder(), _avg_load()
    config = PulsarConfig({"maxUnloadPercentage": "0.5"})
    assert not shedder.find_bundles_for_unloading(load, config).unloads
    second = shedder.find_bundles_for_unloading(load, config)
    assert not second.unloads and any("below minUnloadMessage" in s.reason for s in second.skips)


def test_avg_docs_example_moves_250_msgs_after_two_high_hits_with_a_lower_minimum():
    shedder, (load, hot) = AvgShedder(), _avg_load()
    config = PulsarConfig({"maxUnloadPercentage": "0.5", "minUnloadMessage": "100"})
    assert not shedder.find_bundles_for_unloading(load, config).unloads  # first high hit
    (u,) = shedder.find_bundles_for_unloading(load, config).unloads
    assert (u.broker, u.bundle, u.destination, u.amount) == ("s80", hot[1], "s20", 250.0)
    assert shedder.hit_high.get("s80") is None  # reset after the pair fired


def test_avg_30_70_gap_is_below_the_high_threshold_in_float32():
    shedder, (load, _) = AvgShedder(), _avg_load()
    shedder.find_bundles_for_unloading(load, PulsarConfig())
    assert shedder.hit_high.get("s30") is None and shedder.hit_low["s30"] == 1
    assert "s52" not in shedder.hit_low  # the middle broker pairs with itself (gap 0) and is cleared


def test_driver_respects_the_grace_period_and_assigns_destinations():
    b1 = ns_bundles("a", 4)  # broker ids are host:port: placement parses the host for isolation policies
    load = LoadData({"b1:80": broker(95, b1, throughput=100 * MIB), "b2:80": broker(10, ns_bundles("b", 2)),
                     "b3:80": broker(20, ns_bundles("c", 2))}, {b: bdata(throughput=20 * MIB) for b in b1})
    config = PulsarConfig()
    run = ModularShedding(OverloadShedder(), ModularShedding.named("ThresholdShedder", config).placement)
    first = run.run_cycle(load, config, now_ms=0)
    assert first.unloads and all(u.destination in {"b2:80", "b3:80"} for u in first.unloads)
    moved = {u.bundle for u in first.unloads}
    again = run.run_cycle(load, config, now_ms=29 * 60_000)
    assert not moved & {u.bundle for u in again.unloads}
    later = run.run_cycle(load, config, now_ms=31 * 60_000 + 29 * 60_000)
    assert moved & {u.bundle for u in later.unloads}


@pytest.mark.parametrize("grace, held", [
    ("-1", False),  # now + 1 minute: every unload forgotten at once
    (str(-(2**62)), True),  # TimeUnit.toMillis saturates at Long.MIN_VALUE, and now - MIN_VALUE wraps below zero
    (str(2**62), True),  # saturates at Long.MAX_VALUE: nothing forgotten either
    (str(2**63 - 1), True),
])
def test_the_grace_period_at_javas_extremes_holds_unloads_as_pulsars_long_arithmetic_does(grace, held):
    load = LoadData({"b1:80": broker(95, ns_bundles("a", 4), throughput=100 * MIB), "b2:80": broker(10, ns_bundles("b", 2)),
                     "b3:80": broker(20, ns_bundles("c", 2))}, {b: bdata(throughput=20 * MIB) for b in ns_bundles("a", 4)})
    config = PulsarConfig({"loadBalancerSheddingGracePeriodMinutes": grace})
    run = ModularShedding.named("OverloadShedder", config)
    moved = {u.bundle for u in run.run_cycle(load, config, now_ms=1_700_000_000_000).unloads}
    again = {u.bundle for u in run.run_cycle(load, config, now_ms=1_700_000_060_000).unloads}
    assert moved and bool(moved & again) is not held


def test_driver_does_nothing_when_shedding_is_disabled():
    load = LoadData({"b1": broker(95, ns_bundles("a", 2)), "b2": broker(10)})
    config = PulsarConfig({"loadBalancerSheddingEnabled": "false"})
    result = ModularShedding.named("OverloadShedder", config).run_cycle(load, config, 0)
    assert not result.unloads and "disabled" in result.notes[0]


def test_a_placement_class_pulsar_does_not_ship_is_replayed_with_the_default_and_said():
    from lb_pipeline.algorithms.shedding.placement import LeastLongTermMessageRate

    config = PulsarConfig({"loadBalancerLoadPlacementStrategy": "com.acme.pulsar.OurPlacement"})
    run = ModularShedding.named("ThresholdShedder", config)
    assert isinstance(run.placement.strategy, LeastLongTermMessageRate)
    assert "com.acme.pulsar.OurPlacement" in run.notes[0]
    with pytest.raises(ValueError, match="unknown placement strategy 'OurPlacement'"):  # asked for by name: refused
        ModularShedding.named("ThresholdShedder", config, placement="OurPlacement")


def test_the_frame_reads_every_shape_of_short_term_average_as_the_leader_does():
    """The frame's fast read of the short-term averages (floats, every field) agrees with ``short_term`` on the
    shapes that take the slow one: no average (the default seed), a missing field (0), integers."""
    import numpy as np

    from lb_pipeline.algorithms.shedding.frame import build_frame, short_term

    data = {"t/ns/0x00000000_0x40000000": {"shortTermData": {"msgRateIn": 1.5, "msgRateOut": 2.0,
                                                             "msgThroughputIn": 10.0, "msgThroughputOut": 5.0}},
            "t/ns/0x40000000_0x80000000": {},
            "t/ns/0x80000000_0xc0000000": {"shortTermData": {"msgRateIn": 3.0, "msgThroughputIn": 7.0}},
            "t/ns/0xc0000000_0xffffffff": {"shortTermData": {"msgRateIn": 4, "msgRateOut": 1,
                                                             "msgThroughputIn": 2, "msgThroughputOut": 3}}}
    frame = build_frame({"b:8080": {"bundles": list(data)}}, data, False)
    for b, i in frame.position.items():
        assert (frame.short_rate[i], frame.short_tput[i]) == short_term(data[b]), b
    assert frame.short_rate.dtype == np.float64 and sorted(frame.owned[0].tolist()) == [0, 1, 2, 3]
    again = build_frame({"b:8080": {"bundles": list(data)}}, {**data, "t/ns/0x00000000_0x40000000": {}}, False)
    assert again.short_rate[again.position["t/ns/0x00000000_0x40000000"]] == 100.0  # same keys, new values
