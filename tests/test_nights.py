"""The nights the lake holds at a glance: per-night metrics from the gold tables, and tonight against the means of
the nights before it."""

from __future__ import annotations

import pytest

from lb_pipeline.report.nights import findings_trend, nights_context
from lb_pipeline.transforms.nights import COLUMNS, METRICS, night_metrics, trend_rows

DAY = "2026-01-15"


def test_tonight_is_compared_with_the_nights_before_it_only():
    rows = [{"cluster": c, "snapshot_date": f"2026-01-{d:02d}", **{m: float(d) for m in METRICS}}
            for c in ("c", "other") for d in range(1, 18)]  # 16 and 17 are later nights: a re-run of the 15th
    ctx = nights_context(rows, "c", DAY)
    assert ctx["earlier"] == 14 and [w["held"] for w in ctx["windows"]] == [7, 14]
    unloads = next(m for m in ctx["metrics"] if m["name"] == "unloads")
    assert unloads["tonight"] == 15.0
    assert unloads["means"] == [pytest.approx(sum(range(8, 15)) / 7), pytest.approx(sum(range(1, 15)) / 14)]
    assert [r["snapshot_date"] for r in ctx["recent"]] == [f"2026-01-{d:02d}" for d in range(15, 8, -1)]


def test_the_trends_table_holds_tonight_against_each_window_per_cluster_and_metric():
    rows = [{"cluster": c, "snapshot_date": f"2026-01-{d:02d}", **{m: float(d) for m in METRICS}}
            for c in ("c", "other") for d in range(1, 18)]
    rows.append({"cluster": "gone", "snapshot_date": "2026-01-10", **{m: 1.0 for m in METRICS}})  # no row tonight
    table = trend_rows(rows, DAY)
    assert {(r["cluster"], r["metric"]) for r in table} == {(c, m) for c in ("c", "other") for m in METRICS}
    unloads = next(r for r in table if r["cluster"] == "c" and r["metric"] == "unloads")
    assert unloads == {"cluster": "c", "snapshot_date": DAY, "metric": "unloads", "tonight": 15.0,
                       "mean_7": pytest.approx(sum(range(8, 15)) / 7), "nights_7": 7,
                       "mean_30": pytest.approx(sum(range(1, 15)) / 14), "nights_30": 14}
    first = trend_rows([{"cluster": "c", "snapshot_date": DAY, **{m: 2.0 for m in METRICS}}], DAY)
    assert all(r["nights_7"] == r["nights_30"] == 0 and r["mean_7"] is None and r["tonight"] == 2.0 for r in first)


def test_a_partial_night_is_listed_as_such_and_left_out_of_the_means():
    rows = [{"cluster": "c", "snapshot_date": f"2026-01-{d:02d}", **{m: float(d) for m in METRICS}} for d in range(1, 16)]
    partial = {"2026-01-14": {"run_id": "r1", "started": None}, "2026-01-12": {"run_id": "r2", "started": None}}
    ctx = nights_context(rows, "c", DAY, partial)
    assert ctx["partial"] == ["2026-01-14", "2026-01-12"] and ctx["earlier"] == 12
    unloads = next(m for m in ctx["metrics"] if m["name"] == "unloads")
    assert unloads["means"][0] == pytest.approx((13 + 11 + 10 + 9 + 8 + 7 + 6) / 7)  # the last seven complete ones
    assert {r["snapshot_date"]: r["partial"] for r in ctx["recent"][:3]} == \
        {"2026-01-15": False, "2026-01-14": True, "2026-01-13": False}
    table = {r["metric"]: r for r in trend_rows(rows, DAY, partial)}
    assert table["unloads"]["mean_7"] == unloads["means"][0] and table["unloads"]["nights_30"] == 12


def test_partial_nights_are_those_before_tonight_left_running(spark):
    from datetime import datetime

    from lb_pipeline.transforms.night_runs import COMPLETE, RUNNING, SCHEMA, mark, partial_nights

    runs = spark.createDataFrame(mark("2026-01-13", RUNNING, "a") + mark("2026-01-14", COMPLETE, "b")
                                 + mark(DAY, RUNNING, "c"), SCHEMA)
    found = partial_nights(runs, DAY)
    assert list(found) == ["2026-01-13"] and found["2026-01-13"]["run_id"] == "a"
    assert isinstance(found["2026-01-13"]["started"], datetime) and found["2026-01-13"]["started"].tzinfo is not None
    assert partial_nights(None, DAY) == {}


def test_a_first_night_has_nothing_to_compare_with():
    ctx = nights_context([{"cluster": "c", "snapshot_date": DAY, **{m: 1.0 for m in METRICS}}], "c", DAY)
    assert ctx["earlier"] == 0 and all(m["means"] == [None, None] for m in ctx["metrics"])


@pytest.mark.spark
def test_night_metrics_count_each_gold_table_per_night_within_the_window(spark):
    summary = spark.createDataFrame(
        [("c", d, b, peak, 0.5) for d, peaks in (("2026-01-14", (0.9, 0.4)), (DAY, (0.7, 0.95)), ("2026-01-16", (1.0, 1.0)))
         for b, peak in zip(("b1", "b2"), peaks)],
        "cluster string, snapshot_date string, broker string, peak_max_usage double, mean_max_usage double")
    decisions = spark.createDataFrame([("c", DAY, "OverloadShedder", "x"), ("c", DAY, "OverloadShedder", "y"),
                                       ("c", DAY, "AvgShedder", "z"), ("c", "2025-12-01", "OverloadShedder", "old")],
                                      "cluster string, snapshot_date string, strategy string, bundle string")
    splits = spark.createDataFrame([("c", DAY, "x", True), ("c", DAY, "x", True), ("c", DAY, "y", False)],
                                   "cluster string, snapshot_date string, bundle string, splits boolean")
    findings = spark.createDataFrame([("c", "2026-01-14", "critical"), ("c", "2026-01-14", "warning"),
                                      ("c", "2026-01-14", "info")], "cluster string, snapshot_date string, severity string")
    rows = {r.snapshot_date: r.asDict() for r in night_metrics(DAY, 0.85, "OverloadShedder", summary, decisions, splits,
                                                                findings).collect()}
    assert sorted(rows) == ["2026-01-14", DAY]  # the later night and the one outside 30 days are left out
    assert rows[DAY] == {"cluster": "c", "snapshot_date": DAY, "peak_usage": 0.95, "mean_usage": 0.5, "brokers": 2,
                         "brokers_overloaded": 1, "unloads": 2, "splits": 1, "critical_findings": 0,
                         "warning_findings": 0, "info_findings": 0}
    assert rows["2026-01-14"]["unloads"] == 0 and rows["2026-01-14"]["critical_findings"] == 1
    assert findings_trend(list(rows.values()), "c", DAY) == [
        {"night": DAY, "critical": 0, "warning": 0, "info": 0}, {"night": "2026-01-14", "critical": 1, "warning": 1, "info": 1}]
    assert night_metrics(DAY, 0.85, "OverloadShedder") is None


@pytest.mark.spark
def test_each_night_is_judged_under_what_its_leader_ran_and_older_rows_under_tonights_configuration(spark):
    """Last night the leader ran AvgShedder with a 70 % threshold, tonight OverloadShedder at 85 %: last night's
    unloads are AvgShedder's and its overloaded brokers those past 70 %, as the gold tables recorded them; rows
    written before the tables recorded either (nulls) are judged under tonight's."""
    before = "2026-01-14"
    summary = spark.createDataFrame(
        [("c", before, "b1", 0.8, 0.5, 1), ("c", before, "b2", 0.6, 0.5, 0), ("c", DAY, "b1", 0.8, 0.5, 0),
         ("c", DAY, "b2", 0.9, 0.5, 1), ("c", "2026-01-13", "b1", 0.9, 0.5, None), ("c", "2026-01-13", "b2", 0.8, 0.5, None)],
        "cluster string, snapshot_date string, broker string, peak_max_usage double, mean_max_usage double, "
        "snapshots_overloaded int")
    decisions = spark.createDataFrame(
        [("c", before, "AvgShedder", "x", True), ("c", before, "OverloadShedder", "y", False),
         ("c", before, "OverloadShedder", "z", False), ("c", DAY, "OverloadShedder", "x", True),
         ("c", DAY, "AvgShedder", "y", False), ("c", "2026-01-13", "OverloadShedder", "x", None),
         ("c", "2026-01-13", "OverloadShedder", "y", None), ("c", "2026-01-13", "AvgShedder", "z", None)],
        "cluster string, snapshot_date string, strategy string, bundle string, leader_ran boolean")
    rows = {r.snapshot_date: r for r in night_metrics(DAY, 0.85, "OverloadShedder", summary, decisions).collect()}
    assert {d: (r.brokers_overloaded, r.unloads) for d, r in rows.items()} == {
        before: (1, 1), DAY: (1, 1), "2026-01-13": (1, 2)}


def test_the_findings_trend_needs_a_findings_table():
    rows = [{"cluster": "c", "snapshot_date": DAY, **{m: None for m in COLUMNS}}]
    assert findings_trend(rows, "c", DAY) == []
