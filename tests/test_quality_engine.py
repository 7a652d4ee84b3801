"""A suite of a table with a row per bundle (or fewer) runs on a pandas copy; one of a row per topic on Spark. Both
must judge a table alike: the same expectations fail, on the same rows, with the same values."""

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from lb_pipeline.quality import runner

SCHEMA = ("cluster string, snapshot_ts timestamp, bundle string, rate double, bundles long, owner string, "
          "live boolean")
ROWS = [
    ("c1", datetime(2026, 1, 15, 8), "a/b/0x0_0x8", 10.0, 4, "b1", True),
    ("c1", datetime(2026, 1, 15, 8), "a/b/0x8_0xf", float("nan"), None, "b2", True),  # NaN: not null, above all
    ("c1", datetime(2026, 1, 15, 9), "a/b/0x0_0x8", None, 40, None, False),
    ("c1", datetime(2026, 1, 15, 9), "a/b/0x0_0x8", -1.0, 5, "ghost", True),  # a repeated key
]
EXPECTATIONS = [
    {"type": "expect_table_columns_to_match_set", "kwargs": {"column_set": ["cluster", "snapshot_ts", "bundle", "rate",
                                                                            "bundles", "owner", "live"]}},
    {"type": "expect_column_values_to_be_between", "kwargs": {"column": "rate", "min_value": 0, "max_value": 1e9}},
    {"type": "expect_column_values_to_be_between", "kwargs": {"column": "bundles", "min_value": 0, "max_value": 32}},
    {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "rate"}},
    {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "owner"}, "severity": "warning"},
    {"type": "expect_column_values_to_be_in_set", "kwargs": {"column": "owner", "value_set": ["b1", "b2"]}},
    {"type": "expect_column_values_to_be_in_set", "kwargs": {"column": "live", "value_set": [True]}},
    {"type": "expect_compound_columns_to_be_unique", "kwargs": {"column_list": ["snapshot_ts", "bundle"]}},
    {"type": "expect_column_values_to_be_of_type", "kwargs": {"column": "rate", "type_": "DoubleType"}},
    {"type": "expect_column_values_to_be_of_type", "kwargs": {"column": "bundles", "type_": "IntegerType"}},
    {"type": "expect_column_values_to_be_of_type", "kwargs": {"column": "nowhere", "type_": "LongType"}},
]


@pytest.fixture
def suites(tmp_path, monkeypatch):
    """The same expectations as two suites, one on Spark, one on a pandas copy."""
    folder = Path(shutil.copytree(runner.SUITES_DIR, tmp_path / "expectations"))
    for name, meta in (("test.on_spark", {"engine": "spark"}), ("test.on_pandas", {})):
        doc = {"name": name, "meta": {**meta, "index_columns": ["snapshot_ts", "bundle"]}, "expectations": EXPECTATIONS}
        (folder / f"{name}.json").write_text(json.dumps(doc))
    monkeypatch.setattr(runner, "SUITES_DIR", folder)


def _judged(summary):
    """Each failure as compared between engines; the values and rows as sets (GX on Spark counts a NaN out of
    range but does not list it, which the pandas copy does: compared apart)."""
    return [(f.expectation, f.column, f.severity, f.unexpected_count, f.observed if f.unexpected_count is None
             and not str(f.observed).startswith("error") else None) for f in summary.failures]


def _listed(failure):
    return ({json.dumps(v) for v in failure.unexpected_values},
            {json.dumps(r, sort_keys=True, default=str) for r in failure.rows})


def test_a_suite_on_a_pandas_copy_fails_the_same_rows_with_the_same_values_as_on_spark(spark, suites):
    df = spark.createDataFrame(ROWS, SCHEMA)
    on_spark, on_pandas = runner.validate(df, "test.on_spark"), runner.validate(df, "test.on_pandas")
    assert on_pandas.evaluated == on_spark.evaluated == len(EXPECTATIONS)
    assert _judged(on_pandas) == _judged(on_spark)
    failed = {(f.expectation, f.column): f for f in on_pandas.failures}
    for spark_failure in on_spark.failures:
        (values, rows), (spark_values, spark_rows) = _listed(failed[spark_failure.expectation, spark_failure.column]), \
            _listed(spark_failure)
        assert spark_values <= values and spark_rows <= rows
        assert all("NaN" in extra for extra in (values - spark_values) | (rows - spark_rows))
    # NaN is above the rate's bound and is no null, as Spark has it (and named NaN); -1 is below it
    rate = failed["expect_column_values_to_be_between", "rate"]
    assert rate.unexpected_count == 2 and sorted(map(str, rate.unexpected_values)) == ["-1.0", "nan"]
    assert {str(r["rate"]) for r in rate.rows} == {"-1.0", "nan"}
    assert failed["expect_column_values_to_not_be_null", "rate"].unexpected_count == 1
    # a long column with a null keeps its integers: 40 is named, not 40.0
    assert failed["expect_column_values_to_be_between", "bundles"].unexpected_values == [40]
    # types are judged on the Spark schema, a missing column as an error
    assert failed["expect_column_values_to_be_of_type", "bundles"].observed == "LongType"
    assert str(failed["expect_column_values_to_be_of_type", "nowhere"].observed).startswith("error")
    assert ("expect_column_values_to_be_of_type", "rate") not in failed
    # failing rows are named by their index columns as Spark names them (naive UTC timestamps)
    rows = failed["expect_compound_columns_to_be_unique", "snapshot_ts,bundle"].rows
    assert {str(r["snapshot_ts"]) for r in rows} == {"2026-01-15 09:00:00"}
    assert [f.expectation for f in on_pandas.failures] == [f.expectation for f in on_spark.failures]


def test_only_the_suites_of_topic_level_tables_and_of_every_report_write_run_on_spark():
    """A row per topic, or per bundle of every report write (5-12 a broker a minute): too big for a pandas copy."""
    on_spark = {p.stem for p in runner.SUITES_DIR.glob("*.json") if runner.engine(runner.load_suite(p.stem)) == "spark"}
    assert on_spark == {"bronze.topic_stats", "silver.topic_bundle", "bronze.report_writes"}



def test_each_failure_names_the_clusters_whose_rows_fail_it_on_either_engine(spark, suites):
    """A landing of several clusters: each cluster's report shows its own failures, and those of no one cluster's
    rows (a key repeated across clusters) as the landing's."""
    rows = [("c1", datetime(2026, 1, 15, 8), "a/b/0x0_0x8", 10.0, 4, "b1", True),
            ("c1", datetime(2026, 1, 15, 9), "a/b/0x0_0x8", -1.0, 5, "b2", True),  # rate below its bound
            ("c2", datetime(2026, 1, 15, 8), "a/b/0x0_0x8", 5.0, 99, "b1", True)]  # bundles above; the key again
    df = spark.createDataFrame(rows, SCHEMA)
    for suite in ("test.on_spark", "test.on_pandas"):
        failed = {(f.expectation, f.column): f.clusters for f in runner.validate(df, suite).failures}
        assert failed["expect_column_values_to_be_between", "rate"] == ["c1"], suite
        assert failed["expect_column_values_to_be_between", "bundles"] == ["c2"], suite
        assert failed["expect_compound_columns_to_be_unique", "snapshot_ts,bundle"] == [], suite
        one = runner.validate(df.where("cluster = 'c1'"), suite).failures
        assert one and all(f.clusters == ["c1"] for f in one)
