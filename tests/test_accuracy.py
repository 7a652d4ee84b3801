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
    decisions = spark.createDataFrame([
        ("c", T[0], B1, "a", "b", "ThresholdShedder"),   # confirmed, and it landed where predicted
        ("c", T[1], B1, "b", "a", "ThresholdShedder"),   # not what happened
        ("c", T[2], B2, "a", "b", "ThresholdShedder"),   # after the last move: nothing could confirm it
        ("c", T[1], B2, "b", None, "OverloadShedder"),   # another strategy's
    ], "cluster string, snapshot_ts timestamp, bundle string, broker string, destination string, strategy string")
    assert replay_accuracy(decisions, moves, "ThresholdShedder") == {
        "strategy": "ThresholdShedder", "predicted": 2, "moved": 2, "confirmed": 1, "destination_agrees": 1,
        "precision": 0.5, "recall": 0.5}
    assert replay_accuracy(decisions, moves, "OverloadShedder")["confirmed"] == 1


def test_without_recorded_moves_every_prediction_counts_and_none_is_confirmed(spark):
    moves = recorded_moves(_ownership(spark, [(0, B1, "a"), (1, B1, "a")]),
                           spark.createDataFrame([("c", T[t], "t/ns", HALVES) for t in range(2)],
                                                 "cluster string, snapshot_ts timestamp, namespace string, boundaries array<string>"))
    decisions = spark.createDataFrame([("c", T[1], B1, "a", "b", "AvgShedder")],
                                      "cluster string, snapshot_ts timestamp, bundle string, broker string, destination string, strategy string")
    assert replay_accuracy(decisions, moves, "AvgShedder") == {
        "strategy": "AvgShedder", "predicted": 1, "moved": 0, "confirmed": 0, "destination_agrees": 0,
        "precision": 0.0, "recall": None}
