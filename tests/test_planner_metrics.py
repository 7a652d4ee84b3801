"""What a planner reads of a simulated run: overloaded broker-minutes and the peak first, the spread among brokers
that no one-topic bundle pins, and a convergence that fires when the rest of the cluster settles."""

from __future__ import annotations

import numpy as np
import pytest
from tests.simulated import history_and_model

from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.simulation.decision import decide
from lb_pipeline.simulation.engine import Cycle, pinned_by_one_topic
from lb_pipeline.simulation.metrics import timeseries
from lb_pipeline.simulation.run import simulate

UNSPLIT = PulsarConfig().overridden(loadBalancerAutoBundleSplitEnabled="false")
# bundle 0: one topic, 15,000 msg/s each way (CPU 2 + 0.003 × 30,000 = 92 % wherever it goes); 15 more of 4 topics
# at 1,500 msg/s each way on brokers 1 and 2 (about 70 %); broker-3 joins at the fifth snapshot (an event to settle)
HOT = dict(n_brokers=4, n_bundles=16, rate=lambda s, k: 15000.0 if k == 0 else 1500.0,
           owner=lambda s, k: 0 if k == 0 else 1 + k % 2, topics=lambda s, k: 1 if k == 0 else 4,
           live=lambda s, b: b != 3 or s >= 4, msg_bytes=20000)


def test_a_broker_above_the_threshold_with_a_one_topic_bundle_serving_half_its_messages_is_pinned():
    owner = np.array([0, 0, 1, 1, 2])
    present = np.ones(5, bool)
    traffic = np.array([[600.0, 0, 0, 0], [400.0, 0, 0, 0], [900.0, 0, 0, 0], [100.0, 0, 0, 0], [50.0, 0, 0, 0]])
    one = np.array([True, False, False, False, False])
    assert pinned_by_one_topic(owner, present, traffic, one, np.array([0, 1, 2]), 3).tolist() == [True, False, False]
    traffic[1, 0] = 700.0  # the one-topic bundle now serves less than half of broker 0's messages
    assert pinned_by_one_topic(owner, present, traffic, one, np.array([0, 1, 2]), 3).tolist() == [False] * 3


def test_a_pinned_broker_is_left_out_of_the_spread_and_of_balanced_and_counted_apart():
    config = PulsarConfig()
    cycle = Cycle(0, 0, ["a", "b", "c"], np.array([0.98, 0.50, 0.52]), np.array([1, 5, 5]), 0.0, 0.0, 0,
                  pinned=np.array([True, False, False]))
    row = timeseries([cycle], config, [0]).iloc[0]
    assert row["pinned_brokers"] == 1 and row["overloaded_brokers"] == 1
    assert abs(row["usage_std_unpinned"] - 0.01) < 1e-9 and row["usage_std"] > 0.2
    assert bool(row["balanced"])
    unpinned = Cycle(0, 0, ["a", "b", "c"], np.array([0.98, 0.50, 0.52]), np.array([1, 5, 5]), 0.0, 0.0, 0,
                     pinned=np.array([False, False, False]))
    assert not bool(timeseries([unpinned], config, [0]).iloc[0]["balanced"])


@pytest.mark.parametrize("strategy", ["no-balancing", "OverloadShedder", "ThresholdShedder", "UniformLoadShedder",
                                      "AvgShedder"])
def test_a_one_topic_bundle_no_broker_can_serve_pins_a_broker_under_every_strategy(strategy):
    h, m = history_and_model(**HOT)
    run = simulate(h, m, UNSPLIT, strategy)
    ts, s = run.timeseries, run.summary
    assert (ts["pinned_brokers"] == 1).all()  # wherever the bundle goes, its broker is pinned
    assert s["pinned_broker_minutes"] == len(ts) and s["overloaded_broker_minutes"] >= s["pinned_broker_minutes"]
    assert s["peak_usage"] >= 0.92 - 1e-9
    assert s["usage_std_unpinned_mean"] < s["usage_std_mean"]


def test_convergence_fires_when_the_brokers_a_strategy_can_help_settle():
    """Counting the pinned broker, no run ever is "balanced" (it is overloaded all day): the join was never settled.
    Among the others, ThresholdShedder fills the new broker and settles; leaving ownership alone does not."""
    h, m = history_and_model(**HOT)
    settled = simulate(h, m, UNSPLIT, "ThresholdShedder").summary
    assert settled["events"] == 1 and settled["events_converged"] == 1 and settled["minutes_to_converge_max"] <= 30
    frozen = simulate(h, m, UNSPLIT, "no-balancing").summary
    assert frozen["events"] == 1 and frozen["events_converged"] == 0


def runs_of(levels: dict[str, tuple[float, float, float]]):
    """Runs and their cycles: per strategy (spread among all brokers, among unpinned ones, peak)."""
    runs, cycles = [], {}
    for k, (strategy, (all_, unpinned, peak)) in enumerate(levels.items()):
        run_id = f"{strategy}#{k}"
        cycles[run_id] = list(unpinned + 0.002 * np.random.default_rng(k).standard_normal(120))
        runs.append({"run_id": run_id, "strategy": strategy, "params": {}, "seed": 0, "usage_std_mean": all_,
                     "usage_std_unpinned_mean": float(np.mean(cycles[run_id])), "peak_usage": peak,
                     "reconnections": 10 * k, "overloaded_broker_minutes": 0, "notes": ""})
    return runs, cycles


def test_the_decision_compares_the_unpinned_spread_and_never_takes_a_hotter_peak():
    # with every broker counted, OverloadShedder looks 5 points better; among unpinned brokers it is not
    runs, cycles = runs_of({"no-balancing": (0.20, 0.08, 0.95), "ThresholdShedder": (0.20, 0.08, 0.95),
                            "OverloadShedder": (0.15, 0.08, 0.95)})
    rec = decide(runs, PulsarConfig(), cycles)
    assert rec["decision"] == "keep" and abs(rec["current_imbalance"] - 0.08) < 0.002
    # a clearly better unpinned spread, but a peak 6 points hotter than the configured strategy's: not admitted
    runs, cycles = runs_of({"no-balancing": (0.20, 0.10, 0.80), "ThresholdShedder": (0.20, 0.10, 0.80),
                            "UniformLoadShedder": (0.15, 0.05, 0.86)})
    assert decide(runs, PulsarConfig(), cycles)["decision"] == "keep"
    runs[2]["peak_usage"] = 0.80
    rec = decide(runs, PulsarConfig(), cycles)
    assert rec["decision"] == "change" and rec["strategy"] == "UniformLoadShedder"


def hot_night(overloaded: dict[str, list[float]], spread: float = 0.10):
    """Runs of equal spread and the given overloaded brokers per cycle (one-minute cycles)."""
    runs, cycles, hot = [], {}, {}
    for k, (strategy, counts) in enumerate(overloaded.items()):
        run_id = f"{strategy}#{k}"
        cycles[run_id] = list(spread + 0.002 * np.random.default_rng(k).standard_normal(len(counts)))
        hot[run_id] = counts
        runs.append({"run_id": run_id, "strategy": strategy, "params": {}, "seed": 0, "usage_std_mean": spread,
                     "usage_std_unpinned_mean": float(np.mean(cycles[run_id])), "peak_usage": 1.0,
                     "reconnections": 10 * k, "overloaded_broker_minutes": int(sum(counts)), "notes": ""})
    return runs, cycles, hot


def test_a_strategy_with_clearly_fewer_overloaded_broker_minutes_is_the_decision_before_any_spread():
    """The S day: ThresholdShedder keeps four brokers over the threshold all day where UniformLoadShedder puts the hot
    one-topic bundle on a broker large enough for it; the spread alone (equal here) would keep the configuration."""
    n = 240
    runs, cycles, hot = hot_night({"no-balancing": [3.0] * n, "ThresholdShedder": [4.0] * n,
                                   "UniformLoadShedder": [0.0] * (n - 20) + [2.0] * 20})
    rec = decide(runs, PulsarConfig(), cycles, hot=hot)
    assert rec["decision"] == "change" and rec["strategy"] == "UniformLoadShedder"
    assert rec["basis"] == "overloaded broker-minutes" and rec["current_overloaded"] == 960
    assert rec["candidate_overloaded"] == 40 and rec["gain"] == 920 and rec["gain_low"] <= 920 <= rec["gain_high"]
    assert "overloaded broker-minutes 40 where the configured ThresholdShedder has 960" in rec["rationale"]
    assert rec["commands"]  # how to apply it


def test_fewer_overloaded_minutes_within_the_nights_swings_or_by_a_little_fall_back_to_the_spread():
    n = 240
    # a third fewer overloaded broker-minutes (320 against 480), all of them in bursts of eight brokers
    bursts = list(np.where(np.arange(n) % 60 < 10, 8.0, 0.0))
    runs, cycles, hot = hot_night({"no-balancing": [2.0] * n, "ThresholdShedder": [2.0] * n,
                                   "UniformLoadShedder": bursts})
    rec = decide(runs, PulsarConfig(), cycles, hot=hot)
    assert rec["decision"] == "keep" and rec["basis"] != "overloaded broker-minutes"
    assert "UniformLoadShedder had 160 fewer overloaded broker-minutes, within the night's uncertainty" in rec["rationale"]
    runs, cycles, hot = hot_night({"no-balancing": [2.0] * n, "ThresholdShedder": [2.0] * n,
                                   "UniformLoadShedder": [2.0] * (n - 10) + [1.0] * 10})  # 10 of 480: 2 %
    assert decide(runs, PulsarConfig(), cycles, hot=hot)["basis"] != "overloaded broker-minutes"
