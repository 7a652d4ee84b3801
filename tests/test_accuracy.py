"""The replay's precision and recall against the ownership changes the snapshots recorded."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from lb_pipeline.transforms.accuracy import recorded_moves, replay_accuracy

pytestmark = pytest.mark.spark

T = [datetime(2026, 1, 15, h, tzinfo=timezone.utc) for h in range(3)]
HALVES = ["0x00000000", "0x80000000", "0xffffffff"]
B1, B2 = "t/ns/0x00000000_0x80000000", "t/ns/0x80000000_0xffffffff"
WHOLE = "t/ns2/0x00000000_0xffffffff"


def _ownership(spark, rows):
    return spark.createDataFrame(
        [("c", T[t], b.rsplit("/", 1)[0], b.rsplit("/", 1)[1], b, broker) for t, b, broker in rows],
        "cluster string, snapshot_ts timestamp, namespace string, bundle_range string, bundle string, broker string")


def test_moves_are_counted_split_bundles_are_not_and_predictions_are_matched_until_the_last_move(spark):
    ownership = _ownership(spark, [
        (0, B1, "a"), (0, B2, "b"), (0, WHOLE, "a"),
        (1, B1, "b"), (1, B2, "b"), (1, WHOLE, "a"),  # B1 moved a → b after t0
        (2, B1, "b"), (2, B2, "a"),                   # B2 moved b → a after t1; WHOLE was split, not moved
        (2, "t/ns2/0x00000000_0x80000000", "b"), (2, "t/ns2/0x80000000_0xffffffff", "a")])
    layouts = spark.createDataFrame(
        [("c", T[t], "t/ns", HALVES) for t in range(3)] + [("c", T[t], "t/ns2", [HALVES[0], HALVES[2]]) for t in (0, 1)]
        + [("c", T[2], "t/ns2", HALVES)], "cluster string, snapshot_ts timestamp, namespace string, boundaries array<string>")
    moves = recorded_moves(ownership, layouts)
    assert sorted((r.snapshot_ts.hour, r.bundle, r.broker, r.next_broker) for r in moves.collect()) == [
        (0, B1, "a", "b"), (1, B2, "b", "a")]
    decisions = spark.createDataFrame([  # the first two made before the strategy's state caught up (warm_up.py)
        ("c", T[0], B1, "a", "b", "ThresholdShedder", True),   # confirmed, and it landed where predicted
        ("c", T[1], B1, "b", "a", "ThresholdShedder", True),   # not what happened
        ("c", T[2], B2, "a", "b", "ThresholdShedder", True),   # after the last move: nothing could confirm it
        ("c", T[1], B2, "b", None, "OverloadShedder", False),  # another strategy's
    ], "cluster string, snapshot_ts timestamp, bundle string, broker string, destination string, strategy string, "
       "warming_up boolean")
    assert replay_accuracy(decisions, moves, "ThresholdShedder") == {
        "strategy": "ThresholdShedder", "predicted": 2, "moved": 2, "confirmed": 1, "destination_agrees": 1,
        "warming_up": 2, "warming_up_confirmed": 1,
        "precision": 0.5, "recall": 0.5, "selections": 2, "selections_agree": 1}
    assert replay_accuracy(decisions, moves, "OverloadShedder")["confirmed"] == 1


def test_without_recorded_moves_every_prediction_counts_and_none_is_confirmed(spark):
    moves = recorded_moves(_ownership(spark, [(0, B1, "a"), (1, B1, "a")]),
                           spark.createDataFrame([("c", T[t], "t/ns", HALVES) for t in range(2)],
                                                 "cluster string, snapshot_ts timestamp, namespace string, boundaries array<string>"))
    decisions = spark.createDataFrame([("c", T[1], B1, "a", "b", "AvgShedder")],
                                      "cluster string, snapshot_ts timestamp, bundle string, broker string, destination string, strategy string")
    assert replay_accuracy(decisions, moves, "AvgShedder") == {
        "strategy": "AvgShedder", "predicted": 1, "moved": 0, "confirmed": 0, "destination_agrees": 0,
        "warming_up": 0, "warming_up_confirmed": 0, "precision": 0.0, "recall": None, "selections": 1, "selections_agree": 0}


def test_the_leaders_logged_unloads_are_the_moves_of_the_snapshot_before_them(spark):
    """An unload logged between two snapshots is in the later one's logs and belongs to the earlier one's replay;
    its destination is the one the leader logged. A selection agrees when it is exactly what the leader unloaded
    from that broker."""
    from lb_pipeline.transforms.accuracy import logged_moves

    ownership = _ownership(spark, [(t, b, "a") for t in range(3) for b in (B1, B2)])
    events = spark.createDataFrame([
        ("c", T[1], "unload", B1, "a", "b"),  # logged before T1: the T0 replay's to predict
        ("c", T[1], "shed-attempt", None, "a", None),
        ("c", T[2], "unload", B2, "a", "c"),
        ("c", T[0], "unload", B2, "a", "b"),  # before the day's first snapshot: no replay of the day predicted it
    ], "cluster string, snapshot_ts timestamp, kind string, bundle string, from_broker string, to_broker string")
    moves = logged_moves(events, ownership)
    assert sorted((r.snapshot_ts.hour, r.bundle, r.broker, r.next_broker) for r in moves.collect()) == [
        (0, B1, "a", "b"), (1, B2, "a", "c")]
    decisions = spark.createDataFrame([
        ("c", T[0], B1, "a", "b", "OverloadShedder"), ("c", T[0], B2, "a", "b", "OverloadShedder"),  # one too many
        ("c", T[1], B2, "a", "b", "OverloadShedder")],  # the leader's bundle, another destination
        "cluster string, snapshot_ts timestamp, bundle string, broker string, destination string, strategy string")
    got = replay_accuracy(decisions, moves, "OverloadShedder")
    assert (got["predicted"], got["moved"], got["confirmed"], got["destination_agrees"]) == (3, 2, 2, 1)
    assert (got["selections"], got["selections_agree"]) == (2, 1)


def test_moves_of_brokers_that_left_restarted_or_went_unreported_are_not_counted(spark):
    from lb_pipeline.transforms.accuracy import stayed_up

    C1, D1 = "t/ns3/0x00000000_0xffffffff", "t/ns4/0x00000000_0xffffffff"
    ownership = _ownership(spark, [
        (0, B1, "a"), (0, B2, "b"), (0, WHOLE, "c"), (0, C1, "c"), (0, D1, "d"),
        (1, C1, "c"), (1, D1, "c"),  # a's ownership file was not collected at t1; b left; c dropped WHOLE;
    ])                                # d restarted, and c took its bundle
    layouts = spark.createDataFrame(
        [("c", T[t], ns, HALVES if ns == "t/ns" else [HALVES[0], HALVES[2]]) for t in range(2)
         for ns in ("t/ns", "t/ns2", "t/ns3", "t/ns4")],
        "cluster string, snapshot_ts timestamp, namespace string, boundaries array<string>")
    reports = spark.createDataFrame(
        [("c", T[t], broker, start) for t in range(2) for broker, start in (("a", 1), ("c", None), ("d", 1 + t))]
        + [("c", T[0], "b", 1)], "cluster string, snapshot_ts timestamp, broker string, start_timestamp_ms long")
    up = stayed_up(ownership, reports)
    assert sorted(r.broker for r in up.collect()) == ["a", "c"]
    moves = recorded_moves(ownership, layouts, up)
    assert [(r.bundle, r.broker, r.next_broker) for r in moves.collect()] == [(WHOLE, "c", None)]
    # without the reports the restart's move counts; the bundles of a and b, who reported no ownership at t1, do not
    assert sorted((r.bundle, r.broker) for r in recorded_moves(ownership, layouts).collect()) == [(WHOLE, "c"), (D1, "d")]
    decisions = spark.createDataFrame([("c", T[0], WHOLE, "c", "a", "AvgShedder"), ("c", T[0], D1, "d", "c", "AvgShedder")],
                                      "cluster string, snapshot_ts timestamp, bundle string, broker string, destination string, strategy string")
    assert replay_accuracy(decisions, moves, "AvgShedder", up=up) == {
        "strategy": "AvgShedder", "predicted": 1, "moved": 1, "confirmed": 1, "destination_agrees": 0,
        "warming_up": 0, "warming_up_confirmed": 0, "precision": 1.0, "recall": 1.0, "selections": 1, "selections_agree": 1}


def test_the_report_names_each_snapshot_whose_load_reports_did_not_land_and_why(spark):
    from lb_pipeline.report.trust import coverage_notes

    snapshots = spark.createDataFrame(
        [("c", T[0], ["a:8080", "b:8080"], []), ("c", T[1], ["a:8080", "b:8080"], ["lb/brokers/b_8080.json"]),
         ("c", T[2], ["a:8080", "b:8080", "c:8080", "d:8080", "e:8080"], [])],
        "cluster string, snapshot_ts timestamp, brokers array<string>, missing_parts array<string>")
    reports = spark.createDataFrame([("c", T[0], "a:8080"), ("c", T[0], "b:8080"), ("c", T[1], "a:8080")],
                                    "cluster string, snapshot_ts timestamp, broker string")
    notes = coverage_notes(snapshots, reports)
    assert len(notes) == 2
    assert notes[0].startswith("At 01:00 UTC the load reports of 1 of 2 brokers did not land (b:8080; the collector "
                               "could not fetch them)")
    assert notes[1].startswith("At 02:00 UTC the load reports of 5 of 5 brokers did not land (a:8080, b:8080, c:8080 "
                               "and 2 more; not collected, missing from the snapshot or quarantined)")
    assert notes[0].endswith("see only the other brokers, and can neither unload from nor place on the ones they miss.")
    assert notes[1].endswith("see no broker and decide nothing there.")
    assert coverage_notes(snapshots, reports, shown=1)[1] == "The same at 1 more snapshot(s) of the night."
    assert coverage_notes(snapshots.where("snapshot_ts = timestamp'2026-01-15 00:00:00'"), reports) == []
