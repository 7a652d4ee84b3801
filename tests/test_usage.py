"""Broker usage as Pulsar computes it (pulsar-modular-shedders.md §1.1, §1.3; pulsar-data-formats.md §2.2)."""

import pytest

from lb_pipeline.model import usage as u


@pytest.mark.parametrize("used, expected", [
    (30, 30.000001907348633), (60, 60.000003814697266), (10, 10.0), (40, 40.0), (140, 140.0),
])
def test_percent_usage_is_float32_arithmetic(used, expected):
    assert u.percent_usage(used, 100) == expected


def test_percent_usage_of_999_per_1000():
    assert u.percent_usage(999, 1000) == 99.9000015258789


@pytest.mark.parametrize("limit", [0, -1, float("nan")])
def test_percent_usage_is_zero_without_a_positive_limit(limit):
    assert u.percent_usage(50, limit) == 0.0


def test_vectorised_percent_matches_scalar():
    import numpy as np

    used, limits = np.array([30.0, 60.0, 999.0, 5.0]), np.array([100.0, 100.0, 1000.0, 0.0])
    assert list(u.percent_usage_array(used, limits)) == [u.percent_usage(a, b) for a, b in zip(used, limits)]


def _report(cpu, mem, direct, bw_in, bw_out, limit=100.0):
    return {"cpu": {"usage": cpu, "limit": limit}, "memory": {"usage": mem, "limit": 200.0 if mem == 800 else limit},
            "directMemory": {"usage": direct, "limit": limit}, "bandwidthIn": {"usage": bw_in, "limit": limit},
            "bandwidthOut": {"usage": bw_out, "limit": limit}}


def test_local_broker_data_test_example_unweighted_max_skips_heap():
    # LocalBrokerDataTest: cpu 1/100, memory 800/200, direct 2/100, in 3/100, out 4/100.
    report = _report(1, 800, 2, 3, 4)
    assert u.max_resource_usage(report) == pytest.approx(0.04)
    half = u.Weights(cpu=0.5, memory=0.5, direct_memory=0.5, bandwidth_in=0.5, bandwidth_out=0.5)
    assert u.max_resource_usage_with_weight_and_memory(report, half) == pytest.approx(2.0)
    assert u.max_resource_usage_with_weight(report, half) == pytest.approx(0.02)


def test_data_format_example_max_usage_is_cpu():
    report = {"cpu": {"usage": 412.0, "limit": 800.0}, "memory": {"usage": 1843.0, "limit": 4096.0},
              "directMemory": {"usage": 1126.0, "limit": 4096.0},
              "bandwidthIn": {"usage": 141902.6, "limit": 1.0e7}, "bandwidthOut": {"usage": 503417.2, "limit": 1.0e7}}
    assert u.max_resource_usage(report) == pytest.approx(0.515, abs=1e-6)


def test_usage_above_100_percent_is_not_clamped():
    assert u.max_resource_usage(_report(140, 0, 0, 0, 0)) == pytest.approx(1.4)


def test_bandwidth_weight_falls_back_to_the_deprecated_spelling():
    w = u.Weights.from_config({"loadBalancerBandwithInResourceWeight": "0.5"})
    assert w.bandwidth_in == 0.5 and w.bandwidth_out == 1.0
    w = u.Weights.from_config({"loadBalancerBandwidthInResourceWeight": "0.3", "loadBalancerBandwithInResourceWeight": "0.5"})
    assert w.bandwidth_in == 0.3


def test_ema_is_seeded_with_the_first_value():
    assert u.ema(None, 0.5, 0.9) == 0.5
    assert u.ema(0.5, 1.0, 0.9) == pytest.approx(0.55)
