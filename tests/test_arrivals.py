"""A bundle's arrival on a new owner, from the report writes: a move by hand taken when the leader saw it, with the
new owner's first report as the leader's sample, and the split check Pulsar runs after every report write
(tests/fixtures/real-runs/writes-threshold: every split the leader logged came 0.1 s after such a report)."""

from pathlib import Path

import pandas as pd
import pytest

from lb_pipeline.simulation.arrivals import COLUMNS, first_listings

RUN = Path(__file__).parent / "fixtures" / "real-runs" / "writes-threshold"
B = "t/n/0x00000000_0x80000000"


def _writes() -> pd.DataFrame:
    rows = [  # (bundle, broker, write_ms, zxid, rate)
        (B, "a:1", 1_000, 1, 10.0), (None, "b:1", 1_500, 2, None),
        (B, "a:1", 2_000, 3, 11.0),
        (None, "a:1", 3_000, 4, None),  # a's report without it: no report lists it for a moment
        (B, "b:1", 4_000, 5, 60.0),  # arrival on b, the leader's averages start again from 60
        (B, "a:1", 4_500, 6, 12.0),  # back on a while b's last report still lists it: the averages go on
        (B, "b:1", 5_000, 7, 13.0),  # and b, a's last report listing it too: they go on
    ]
    return pd.DataFrame([{"bundle": b, "broker": k, "write_ms": t, "zxid": z, "msg_rate_in": r, "msg_rate_out": r,
                          "msg_throughput_in": r, "msg_throughput_out": r} for b, k, t, z, r in rows],
                        columns=list(COLUMNS))


def test_an_arrival_is_a_listing_under_a_new_broker_restarted_where_no_report_listed_the_bundle_before():
    got = first_listings(_writes())
    assert [(a.t, a.broker, a.rates[0], a.restarted) for a in got] == [
        (4_000, "b:1", 60.0, True), (4_500, "a:1", 12.0, False), (5_000, "b:1", 13.0, False)]


@pytest.mark.spark
def test_the_nightly_job_finds_the_same_arrivals_on_spark(spark):
    from lb_pipeline.transforms.arrivals import arrivals

    w = _writes().assign(cluster="c", snapshot_date="2026-01-01")
    df = spark.createDataFrame(w.astype(object).where(w.notna(), None),
                               "bundle string, broker string, write_ms long, zxid long, msg_rate_in double, "
                               "msg_rate_out double, msg_throughput_in double, msg_throughput_out double, "
                               "cluster string, snapshot_date string")
    got = sorted((r.write_ms, r.broker, r.msg_rate_in, r.restarted) for r in arrivals(df).collect())
    assert got == [(a.t, a.broker, a.rates[0], a.restarted) for a in first_listings(_writes())]


def test_the_closed_loop_makes_the_splits_the_new_owners_first_report_made_the_leader_make():
    """writes-threshold: `lb/ns-c16` moved by hand onto the smallest broker; its first report gave two hot bundles
    1,491 and 1,169 msg/s (255 before), the leader split both 0.1 s later, and twice more at later moves. Taken at
    that report with its rates, the loop makes those four splits; at the next snapshot (which already holds the
    children) it made none."""
    from lb_pipeline.simulation.history import build_history
    from lb_pipeline.simulation.landing import read_history, read_leader, snapshot_dirs
    from lb_pipeline.simulation.landing_writes import read_arrivals
    from lb_pipeline.simulation.leader_averages import leader_averages, stored_every
    from lb_pipeline.simulation.load_model import fit_load_model
    from lb_pipeline.simulation.real_validation import score

    landing, day = RUN / "landing", "2026-12-06"
    cluster, brokers, bundles, config, notes, policies, topics, _ = read_history(landing, day)
    averages, events, written, quotas = read_leader(landing, day, cluster, notes, bundles)
    arrived = read_arrivals(snapshot_dirs(landing, day, cluster)[1], landing.resolve(), cluster)
    assert sum(a.rates[0] + a.rates[1] > 1_000 for a in arrived) == 2

    def scored(with_arrivals: bool) -> dict:
        history = build_history(cluster, brokers, bundles)
        leader = leader_averages(history, averages, events, written, stored_every(config), quotas)
        return score(history, fit_load_model(brokers), config, policies, topics, events, day, list(notes),
                     leader=leader, arrivals=arrived if with_arrivals else None)

    timed, snapshot = scored(True), scored(False)
    assert (timed["logged_splits"], timed["simulated_splits"], timed["matched_splits"]) == (4, 4, 4)
    assert (snapshot["simulated_splits"], snapshot["matched_splits"]) == (0, 0)
    assert (timed["logged_unloads"], timed["matched_unloads"]) == (6, 6)  # the unloads as before
    assert any("taken when the new owner's first report showed them" in n for n in timed["notes"])


def test_a_bundle_the_leader_sent_away_and_a_hand_sent_back_between_two_snapshots_is_moved_back_when_it_arrives():
    """Both snapshots show the bundle on a, so the ownership alone shows no move; the report writes show it arrive
    on b (the leader's logged unload, which the loop makes itself) and then on a again (by hand): the loop takes the
    move back at that report, as it takes any move by hand (real-probe-burst: the closed loop 4 → 5 of its 10
    logged unloads)."""
    from types import SimpleNamespace

    import numpy as np

    from lb_pipeline.simulation.arrivals import Arrival, timed_moves

    history = SimpleNamespace(times=np.array([0, 60_000]), bundles=[B], brokers=["a:1", "b:1"],
                              present=np.array([[True], [True]]), owner=np.array([[0], [0]]),
                              live=np.array([[True, True], [True, True]]))
    away, back = Arrival(3_000, B, "b:1", (1.0,) * 4), Arrival(40_000, B, "a:1", (1.0,) * 4)
    unloads = [(2_900, B, "a:1", "b:1")]
    assert timed_moves(history, [away, back], unloads, 90_000) == [(back, 0, 0)]
    assert timed_moves(history, [away], unloads, 90_000) == []  # the leader's own unload: the loop makes its own
    history.owner = np.array([[0], [1]])
    assert timed_moves(history, [away], unloads, 90_000) == []


def test_a_bundle_both_snapshots_show_on_one_broker_is_moved_back_there_if_the_leader_sent_it_away_between():
    """Without the report writes the snapshots are all there is: the leader's logged unload took the bundle from a
    to b, the next snapshot shows it on a again, so a hand moved it back (the ownership alone shows no move); one the
    next snapshot shows on b is the leader's own."""
    from types import SimpleNamespace

    import numpy as np

    from lb_pipeline.simulation.real_validation import imposed_moves

    history = SimpleNamespace(times=np.array([0, 60_000]), bundles=[B, "t/n/0x80000000_0xffffffff"],
                              brokers=["a:1", "b:1"], owner=np.array([[0, 0], [0, 1]]),
                              live=np.array([[True, True], [True, True]]))
    unloads = [(2_900, B, "a:1", "b:1"), (3_100, "t/n/0x80000000_0xffffffff", "a:1", "b:1")]
    assert imposed_moves(history, unloads) == {1: [(0, 0)]}
    assert imposed_moves(history, []) == {1: [(1, 1)]}  # no unload logged: the change of owner is imposed


def test_on_the_uniform_record_with_every_write_the_closed_loop_meets_the_unload_targets():
    """writes-uniform (UniformLoadShedder, 76 logged unloads, moves by hand of every `lb/ns-c16` bundle five times):
    the closed loop makes 86 unloads, 69 of them the leader's (docs/validation.md), precision and recall at least
    0.8, the issue's targets. It needs the moves the leader made and a hand undid within one interval (both
    snapshots show the bundle where it was) taken as moves by hand: without them the loop kept those bundles where
    its own unloads had put them and shed them again (92 simulated, 67 matched)."""
    from lb_pipeline.simulation.real_validation import validate_simulation

    r = validate_simulation(RUN.parent / "writes-uniform" / "landing", "2026-12-06")
    assert r["logged_unloads"] == 76 and r["precision"] >= 0.8 and r["recall"] >= 0.8, r
