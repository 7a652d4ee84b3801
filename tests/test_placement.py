"""Placement strategies (pulsar-modular-shedders.md §11-13; bundles spec §4.5)."""

import random

from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.placement import (
    ExtensibleLeastResourceUsageWithWeight, LeastLongTermMessageRate, LeastResourceUsageWithWeight, RoundRobinBrokerSelector,
)
from lb_pipeline.model.config import PulsarConfig
from tests.test_shedders_modular import bdata, broker


def _load(cpus, rates):
    brokers, data = {}, {}
    for i, (cpu, rate) in enumerate(zip(cpus, rates)):
        b = f"t/n{i}/0x00000000_0xffffffff"
        brokers[f"b{i}"] = broker(cpu, [b], rate=rate)
        data[b] = bdata(rate=rate)
    return LoadData(brokers, data)


def test_lltmr_picks_the_least_long_term_rate_and_skips_overloaded_brokers():
    load = _load([10, 90, 20], [500.0, 10.0, 100.0])
    assert LeastLongTermMessageRate().best(list(load.brokers), load, PulsarConfig()) == ["b2"]


def test_lltmr_with_every_broker_overloaded_keeps_them_all():
    load = _load([90, 95], [1.0, 2.0])
    assert LeastLongTermMessageRate().best(["b0", "b1"], load, PulsarConfig()) == ["b0", "b1"]


def test_lruw_docs_example_10_30_80_keeps_only_the_first_broker_in_float32():
    load = _load([10, 30, 80], [1.0, 1.0, 1.0])
    assert LeastResourceUsageWithWeight().best(["b0", "b1", "b2"], load, PulsarConfig()) == ["b0"]


def test_lruw_history_advances_once_per_call():
    strategy, config = LeastResourceUsageWithWeight(), PulsarConfig()
    strategy.best(["b0", "b1"], _load([10, 50], [1.0, 1.0]), config)
    strategy.best(["b0", "b1"], _load([90, 50], [1.0, 1.0]), config)
    assert abs(strategy.history["b0"] - (0.1 * 0.9 + 0.9 * 0.1)) < 1e-6


def test_extensible_lruw_uses_weighted_max_ema_and_falls_back_to_all():
    s = ExtensibleLeastResourceUsageWithWeight()
    assert s.best(["a", "b", "c"], {"a": 0.1, "b": 0.5, "c": 0.6}, PulsarConfig()) == ["a"]
    assert s.best(["a", "b"], {"a": 0.5, "b": 0.5}, PulsarConfig()) == ["a", "b"]
    assert s.best(["x"], {}, PulsarConfig()) == ["x"]


def test_random_tie_breaks_are_reproducible_with_a_seed():
    load = _load([10, 10, 10], [1.0, 1.0, 1.0])
    picks = [LeastLongTermMessageRate(rng=random.Random(7)).select(list(load.brokers), load, PulsarConfig())
             for _ in range(3)]
    assert len(set(picks)) == 1


def test_round_robin_cycles_through_candidates():
    rr = RoundRobinBrokerSelector()
    assert [rr.select(["a", "b", "c"]) for _ in range(4)] == ["a", "b", "c", "a"]
    assert rr.select([]) is None
