"""The closed-loop simulation on scripted clusters whose right answer is known, and its invariants."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tests.simulated import START, bundle_names, cpu_model, history_and_model, scripted

from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.simulation.balancers import STRATEGIES, make_balancer
from lb_pipeline.simulation.engine import Simulation
from lb_pipeline.simulation.history import build_history
from lb_pipeline.simulation.load_model import LoadModel
from lb_pipeline.simulation.run import run_config, simulate

EVERYONE = (*STRATEGIES, "no-balancing", "as-recorded")
# three equal bundles at 200 MB/s each would pass the bandwidth split threshold: these tests are about shedding
UNSPLIT = PulsarConfig().overridden(loadBalancerAutoBundleSplitEnabled="false")

# broker-3 joins at snapshot 4, broker-2 restarts at 6, broker-1 leaves at 8; the recorded owners move accordingly
EVENTFUL = dict(n_brokers=4, n_bundles=32, rate=lambda s, k: 300.0 + 40 * (k % 5) * (1 + s % 3),
                live=lambda s, b: not (b == 3 and s < 4) and not (b == 1 and s >= 8),
                start=lambda s, b: 2 if (b == 2 and s >= 6) else 1,
                owner=lambda s, k: (k % 3) if s < 8 else (0, 2, 3)[k % 3])


@pytest.fixture(scope="module")
def eventful():
    return history_and_model(**EVENTFUL)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("strategy", ["ThresholdShedder", "UniformLoadShedder", "AvgShedder", "TransferShedder"])
def test_one_overloaded_broker_among_idle_ones_settles_in_bounded_cycles_without_ping_pong(strategy, seed):
    # every bundle on broker-0 (98 % CPU), three idle brokers; 3 % of CPU per bundle
    h, m = history_and_model(n_brokers=4, n_bundles=32, msg_bytes=20000, rate=lambda s, k: 500.0)
    run = simulate(h, m, PulsarConfig(), strategy, seed=seed)
    ts = run.timeseries
    assert ts["usage_max"].iloc[0] > 0.85
    unsettled = np.flatnonzero(~ts["balanced"].to_numpy())
    assert unsettled[-1] + 1 <= 45  # balanced from then to the end of the history
    assert ts["usage_max"].iloc[-1] <= 0.40
    assert run.summary["ping_pongs"] == 0
    assert 16 <= run.summary["unloads"] <= 40  # about three quarters of the bundles must move, not many more


def test_without_balancing_the_overloaded_broker_stays_overloaded():
    h, m = history_and_model(n_brokers=4, n_bundles=16)
    run = simulate(h, m, PulsarConfig(), "no-balancing")
    assert run.summary["unloads"] == 0
    assert run.summary["overloaded_broker_minutes"] == len(run.timeseries)


@pytest.mark.parametrize("strategy, pulsar", [("ThresholdShedder", "sheds back to back"),
                                               ("TransferShedder", "does not shed at all")])
def test_a_shedding_interval_of_zero_or_less_runs_a_cycle_a_minute_and_says_what_pulsar_does(strategy, pulsar):
    """Overloaded minutes were counted at the configured interval: 0 gave 0 minutes and -5 negative ones."""
    h, m = history_and_model(n_brokers=4, n_bundles=16)
    every_minute = simulate(h, m, PulsarConfig(), strategy)
    for minutes in ("0", "-5"):
        run = simulate(h, m, PulsarConfig(), strategy, {"loadBalancerSheddingIntervalMinutes": minutes})
        assert run.summary["overloaded_broker_minutes"] == every_minute.summary["overloaded_broker_minutes"] > 0
        assert any(n.startswith(f"loadBalancerSheddingIntervalMinutes={minutes}: ") and pulsar in n for n in run.notes)
    assert not any(n.startswith("loadBalancerSheddingIntervalMinutes=") for n in every_minute.notes)


def test_a_history_that_makes_threshold_shedder_oscillate_is_reported_as_ping_pong():
    # two brokers, three equal bundles: two on one broker is always above the mean plus the band
    h, m = history_and_model(n_brokers=2, n_bundles=3, msg_bytes=20000, rate=lambda s, k: 5000.0)
    wobbly = simulate(h, m, UNSPLIT, "ThresholdShedder", {"loadBalancerSheddingGracePeriodMinutes": 0})
    assert wobbly.summary["ping_pongs"] >= 3
    guarded = simulate(h, m, UNSPLIT, "ThresholdShedder")
    assert guarded.summary["ping_pongs"] == 0  # the 30-minute grace period keeps a bundle from coming straight back


@pytest.mark.parametrize("strategy", EVERYONE)
def test_every_cycle_conserves_traffic_and_every_bundle_has_one_live_owner(eventful, strategy):
    h, m = eventful
    sim = simulate(h, m, PulsarConfig(), strategy, seed=3)
    ts = sim.timeseries
    assert np.allclose(ts["rate_served"], ts["rate_recorded"])
    assert (ts["unowned_bundles"] == 0).all()
    assert (ts["bundles"] == 32).all()
    gone = sim.moves[sim.moves["ts"] >= h.times[8]]
    assert "broker-1:8080" not in set(gone["destination"])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_no_bundle_is_unloaded_again_inside_the_grace_period(strategy):
    h, m = history_and_model(n_brokers=2, n_bundles=3, msg_bytes=20000, rate=lambda s, k: 5000.0, snapshots=25)
    mv = simulate(h, m, UNSPLIT, strategy).moves
    unloads = mv[mv["kind"] == "unload"].sort_values("ts")
    gaps = unloads.groupby("bundle")["ts"].diff().dropna()
    assert (gaps > 30 * 60_000).all()


@pytest.mark.parametrize("strategy", ["AvgShedder", "TransferShedder", "ThresholdShedder"])
def test_a_run_is_determined_by_its_seed(eventful, strategy):
    h, m = eventful
    a, b = (simulate(h, m, PulsarConfig(), strategy, seed=5) for _ in range(2))
    pd.testing.assert_frame_equal(a.timeseries, b.timeseries)
    pd.testing.assert_frame_equal(a.moves, b.moves)


def test_brokers_join_leave_and_restart_as_recorded(eventful):
    h, m = eventful
    assert [(e["type"], e["broker"]) for e in h.events()] == [
        ("broker-added", "broker-3:8080"), ("broker-restarted", "broker-2:8080"), ("broker-removed", "broker-1:8080")]
    run = simulate(h, m, PulsarConfig(), "no-balancing")
    placed = run.moves[run.moves["kind"] == "orphan"]
    restart, removal = placed[placed["ts"] == h.times[6]], placed[placed["ts"] == h.times[8]]
    assert set(restart["source"]) == {"broker-2:8080"} and len(restart) > 0
    assert set(removal["source"]) == {"broker-1:8080"} and len(removal) > 0
    assert "broker-2:8080" not in set(restart["destination"])
    assert run.timeseries.loc[run.timeseries["ts"] == h.times[8], "brokers"].item() == 3


def test_as_recorded_follows_the_recorded_ownership(eventful):
    h, m = eventful
    run = simulate(h, m, PulsarConfig(), "as-recorded")
    owner = {b: h.brokers[h.owner[0, n]] for n, b in enumerate(h.bundles)}
    by_ts = run.moves.groupby("ts")
    for s, t in enumerate(h.times):
        if t in by_ts.groups:
            for m_ in by_ts.get_group(t).itertuples():
                owner[m_.bundle] = m_.destination
        assert owner == {b: h.brokers[h.owner[s, n]] for n, b in enumerate(h.bundles)}, s


def test_a_bundle_split_in_the_recorded_history_starts_on_its_parents_simulated_owner():
    parent, children = bundle_names(2)[0], bundle_names(4)[:2]  # t/ns 0x0-0x8 and its halves
    names = [parent, *bundle_names(2, "t/b"), *children]
    # recorded: parent and a small bundle on broker-1, a hot one on broker-0, broker-2 idle; at snapshot 3 the
    # parent splits and both halves stay on broker-1
    owner = lambda s, k: (1 if s < 3 else None, 1, 0, *(((1,) if s >= 3 else (None,)) * 2))[k]  # noqa: E731
    rate = lambda s, k: (2000.0, 50.0, 2000.0, 1000.0, 1000.0)[k]  # noqa: E731
    brokers, bundles = scripted(n_brokers=3, snapshots=6, bundles=names, owner=owner, rate=rate, msg_bytes=20000)
    h = build_history("c", brokers, bundles)
    m = LoadModel.from_table(cpu_model(h.brokers, per_msg=0.02), h.brokers)
    sim = Simulation(h, m, run_config(PulsarConfig(), {})[0], make_balancer("ThresholdShedder", PulsarConfig(), 0))
    for t in h.cycle_times(1):
        cycle = sim.step(int(t))
        if t == h.times[3] - 60_000:
            home = sim.owner[h.bundles.index(parent)]
            assert h.brokers[home] != "broker-1:8080"  # the simulation moved the parent off broker-1
        if t == h.times[3]:
            assert not [m for m in cycle.moves if m["kind"] == "orphan"]
            came_from = {m["bundle"]: m["source"] for m in cycle.moves}  # this cycle's shedding may move one on
            assert [came_from.get(c, h.brokers[sim.owner[h.bundles.index(c)]]) for c in children] == [h.brokers[home]] * 2
            break


def test_bad_input_is_refused_with_what_and_where():
    brokers, bundles = scripted(snapshots=6)
    late = brokers[brokers["snapshot_ts"] == brokers["snapshot_ts"].max()].assign(
        snapshot_ts=START + pd.Timedelta(hours=5))
    with pytest.raises(ValueError, match=r"cluster 'c': the history has a gap of 250 minutes after 2026-01-15T00:50"):
        build_history("c", pd.concat([brokers, late]), bundles)
    h, m = history_and_model()
    with pytest.raises(ValueError, match="unknown strategy 'LeastShedder'"):
        simulate(h, m, PulsarConfig(), "LeastShedder")
    with pytest.raises(ValueError, match="unknown Pulsar configuration key.*loadBalancerBrokerThresholdShedderPercent"):
        simulate(h, m, PulsarConfig(), "ThresholdShedder", {"loadBalancerBrokerThresholdShedderPercent": 5})


def test_the_nightly_job_simulates_the_longest_stretch_of_a_history_with_a_gap():
    brokers, bundles = scripted(snapshots=6)
    late = brokers[brokers["snapshot_ts"] == brokers["snapshot_ts"].max()].assign(
        snapshot_ts=START + pd.Timedelta(hours=5))
    h = build_history("c", pd.concat([brokers, late]), bundles, gaps="longest")
    assert len(h.times) == 6
    assert "1 gap(s); simulated its longest stretch without one" in h.notes[0] and "(6 of 7 snapshots)" in h.notes[0]


def test_a_swap_inside_the_grace_period_is_pulsars_own_doing_but_an_unload_after_it_is_a_violation():
    from lb_pipeline.simulation.metrics import MOVE_COLUMNS, grace_violations

    minute = 60_000
    rows = [(0, "x", "unload", False), (5 * minute, "x", "unload", True),  # swapped back: Pulsar does not hold it
            (9 * minute, "x", "unload", False),  # shed again 4 minutes after the swap: held back by Pulsar
            (60 * minute, "x", "unload", False), (61 * minute, "y", "orphan", False)]
    mv = pd.DataFrame([{"ts": t, "bundle": b, "kind": k, "swap": s} for t, b, k, s in rows], columns=MOVE_COLUMNS)
    assert grace_violations(mv, grace_minutes=30) == 1
    assert grace_violations(mv, grace_minutes=3) == 0


@pytest.mark.parametrize("strategy", ["ThresholdShedder", "TransferShedder"])
def test_where_the_leader_runs_a_new_load_manager_the_strategy_starts_afresh_once(eventful, strategy):
    """Snapshot 5's leader is a new load manager (model.at_start): the balancer restarts once, as the cycle that
    enters it begins, with that cycle's configuration; it keeps its state through every other cycle."""
    history, model = eventful
    config = run_config(UNSPLIT, {})[0]
    balancer, restarted = make_balancer(strategy, config, 0), []
    restart = balancer.restart
    balancer.restart = lambda c: (restarted.append((sim.snapshot, c)), restart(c))  # noqa: E731
    shedder = balancer.run if strategy != "TransferShedder" else balancer.shedder
    sim = Simulation(history, model, config, balancer, leader_restarts=frozenset({5}))
    cycles = list(sim.run())
    assert restarted == [(5, config)]
    assert (balancer.run if strategy != "TransferShedder" else balancer.shedder) is not shedder
    assert len(cycles) == len(history.cycle_times(1))


def test_a_start_time_at_the_end_of_javas_long_beside_a_missing_one_is_a_restart_not_a_failure():
    """Pulsar's ``startTimestamp`` is a Java long: Long.MAX_VALUE is one. A column with a null in it comes as floats,
    and Long.MAX_VALUE as 2^63, which no int64 holds: the history once failed there and took the simulation down."""
    brokers, bundles = scripted(n_brokers=2, snapshots=4, start=lambda s, b: None if (s, b) == (1, 1) else
                                (2**63 - 1 if (s, b) == (2, 0) else 1))
    h = build_history("c", brokers, bundles)
    assert h.start[:, 0].tolist() == [1, 1, 2**63 - 1, 1] and h.start[1, 1] == 0
    assert [e["type"] for e in h.events() if e.get("broker") == "broker-0:8080"].count("broker-restarted") == 2


def test_a_bundle_an_older_load_report_still_lists_after_a_move_is_owned_by_the_newer_reports_broker():
    brokers, bundles = scripted(n_brokers=3, n_bundles=4, snapshots=3, owner=lambda s, k: 1 if k == 0 and s >= 1 else 0)
    brokers["last_update_ms"] = brokers["broker"].map({"broker-0:8080": 100, "broker-1:8080": 200, "broker-2:8080": 300})
    moved = bundles[(bundles["bundle"] == bundle_names(4)[0]) & (bundles["snapshot_ts"] > START)]
    stale = moved.assign(broker="broker-0:8080", msg_rate_in=1.0)  # broker-0's report not rewritten since the move
    h = build_history("c", brokers, pd.concat([bundles, stale, stale.assign(broker="broker-2:8080")]))
    n = h.bundles.index(bundle_names(4)[0])
    assert [h.brokers[b] for b in h.owner[:, n]] == ["broker-0:8080", "broker-2:8080", "broker-2:8080"]
    assert h.traffic[1, n, 0] == 1.0
    brokers["last_update_ms"] = brokers["broker"].map({"broker-0:8080": 300, "broker-1:8080": 200, "broker-2:8080": 100})
    h = build_history("c", brokers, pd.concat([bundles, stale]))
    assert [h.brokers[b] for b in h.owner[:, n]] == ["broker-0:8080"] * 3
    assert h.notes == [f"2 bundle report(s) left out: a newer load report of another broker holds the bundle too, a move "
                       f"the older report had not caught up with (e.g. {bundle_names(4)[0]} at 00:10: broker-0:8080's "
                       f"report kept, broker-1:8080's left out)"]
    brokers = brokers.drop(columns="last_update_ms")  # a report without lastUpdate: the first broker by name
    assert [h.brokers[b] for b in build_history("c", brokers, pd.concat([bundles, stale])).owner[:, n]] == ["broker-0:8080"] * 3


def test_a_snapshot_without_a_cycle_of_its_own_still_brings_its_imposed_moves():
    """Snapshots a minute apart, a shedding cycle every two: the move the history imposes at the snapshot between
    two cycles is made all the same (it had been skipped, and the simulated cluster left the record from there)."""
    from lb_pipeline.simulation.engine import Simulation
    from lb_pipeline.simulation.balancers import make_balancer

    config = PulsarConfig().overridden(loadBalancerSheddingIntervalMinutes="2")
    owner = lambda s, k: 1 if (k == 0 and s >= 1) else 0  # noqa: E731 - bundle 0 moved by hand at snapshot 1
    h, m = history_and_model(n_brokers=2, n_bundles=2, snapshots=4, minutes=1, owner=owner)
    h.imposed = {1: [(0, 1)]}
    sim = Simulation(h, m, config, make_balancer("no-balancing", config, 0, h))
    seen = [(cycle.snapshot, int(sim.owner[0])) for cycle in sim.run()]
    assert seen == [(0, 0), (2, 1)]  # no cycle at snapshot 1; from the next one the bundle is where it was moved


def test_with_residuals_the_recorded_ownership_gives_the_reported_usage_except_where_it_was_saturated():
    """What the load model misses at a snapshot stays with the broker; a report at its limit says nothing of the
    demand past it, so there the model's figure stands."""
    from lb_pipeline.simulation.engine import Simulation
    from lb_pipeline.simulation.balancers import make_balancer

    h, m = history_and_model(n_brokers=2, n_bundles=2, snapshots=3, minutes=1, rate=lambda s, k: 100.0)
    h.usage[:, 0, 0], h.usage[:, 1, 0] = 40.0, 5.0  # CPU % as reported; the model says 2 + 0.003 × 400 on broker 0
    h.usage[2, 0, 0] = 100.0  # at its limit
    config = PulsarConfig()
    runs = {r: Simulation(h, m, config, make_balancer("no-balancing", config, 0, h), residuals=r) for r in (True, False)}
    first = {r: {c.snapshot: c.weighted_max for c in sim.run()} for r, sim in runs.items()}
    assert first[True][0] == pytest.approx([0.40, 0.05]) and first[True][1] == pytest.approx([0.40, 0.05])
    assert first[True][2] == pytest.approx([0.032, 0.05])  # saturated: the model's 3.2 %
    assert first[False][0] == pytest.approx([0.032, 0.02])  # the model alone everywhere


def test_on_the_leaders_schedule_the_cycle_after_a_snapshot_takes_its_traffic_and_later_ones_interpolate():
    """Snapshots 10 minutes apart, the traffic doubling from the first to the second: the leader's cycle 30 s after
    the first snapshot decides from what that snapshot holds; one 5 minutes after it, from the traffic halfway."""
    h, m = history_and_model(n_brokers=2, n_bundles=2, snapshots=3, minutes=10, rate=lambda s, k: 1000.0 * (s + 1))
    t0 = int(h.times[0])
    sim = Simulation(h, m, PulsarConfig(), make_balancer("no-balancing", PulsarConfig(), 0, h),
                     schedule=[t0 + 30_000, t0 + 5 * 60_000])
    first, later = list(sim.run())
    assert (first.ts, later.ts) == (t0 + 30_000, t0 + 5 * 60_000)
    # broker-0 serves both bundles: 2 % idle + 0.003 × msg/s (in+out): 4,000 msg/s at the first snapshot, 6,000 halfway
    assert first.weighted_max[0] == pytest.approx(0.14) and later.weighted_max[0] == pytest.approx(0.20)
