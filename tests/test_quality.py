"""Great Expectations suites: each expectation catches a deliberately corrupted table; clean tables pass;
a failed blocking check stops the downstream assets of that partition."""

import json
import shutil
from pathlib import Path

import dagster as dg
import pytest
from pyspark.sql import functions as F

from lb_pipeline.quality import runner, views
from lb_pipeline.quality.runner import load_suite, validate
from tests.conftest import DEMO_DAY

REAL_DAY = "2026-12-06"  # the day of tests/fixtures/real-runs/writes-threshold (tests/background.py: real_night)

pytestmark = pytest.mark.spark

CASES = [(suite, i) for suite in views.SUITES for i in range(len(load_suite(suite)["expectations"]))]
ROW_LEVEL = {"expect_column_values_to_not_be_null", "expect_compound_columns_to_be_unique",
             "expect_column_values_to_be_between", "expect_column_values_to_be_in_set"}
SCHEMA_LEVEL = {"expect_column_values_to_be_of_type", "expect_table_columns_to_match_set"}


def _column(expectation) -> str:
    kw = expectation["kwargs"]
    return kw.get("column") or ",".join(kw.get("column_list") or kw.get("column_set") or [])


def _padded(pdf, schema, suite_doc, rows: int):
    """At least ``rows`` clean rows: copies of the sample with every unique key made unique again."""
    import pandas as pd

    assert len(pdf), "an empty sample cannot be padded"
    keys = {e["kwargs"]["column_list"][-1] for e in suite_doc["expectations"]
            if e["type"] == "expect_compound_columns_to_be_unique"}
    out, i = [pdf], 0
    while sum(map(len, out)) < rows:
        i += 1
        copy = pdf.copy()
        for key in keys:
            if schema[key].dataType.typeName() == "timestamp":
                copy[key] = copy[key] + pd.Timedelta(seconds=i)
            else:
                copy[key] = copy[key].astype(str) + f"~{i}"
        out.append(copy)
    return pd.concat(out, ignore_index=True)


@pytest.fixture(scope="module")
def samples(lake, spark, real_night):
    """A small clean sample of every suite's validation view, as pandas (so corruptions are easy and cheap). A view
    the demo day leaves empty (the leader's log events: the generator writes no broker logs) is sampled from the
    recorded real run's night instead."""
    from lb_pipeline.spark.lake import Lake

    real = Lake(str(real_night.lake))
    out = {}
    for suite, (_, view, _) in views.SUITES.items():
        df = view(lambda ly, t: lake.read(spark, ly, t, DEMO_DAY))
        if df.limit(1).count() == 0:
            df = view(lambda ly, t: real.read(spark, ly, t, REAL_DAY))
        assert df.limit(1).count(), f"{suite}: no rows on the demo day nor in the real run to sample"
        doc = load_suite(suite)
        out[suite] = (_padded(df.limit(40).toPandas(), df.schema, doc, len(doc["expectations"]) + 2), df.schema)
    return out


def _bad_value(expectation, field):
    """A value the expectation must reject, of the column's type."""
    kind, kw = expectation["type"], expectation["kwargs"]
    if kind == "expect_column_values_to_not_be_null":
        return None
    if kind == "expect_column_values_to_be_between":
        value = (kw["min_value"] - 1) if kw.get("min_value") is not None else (kw["max_value"] + 1)
    else:
        allowed = kw["value_set"]
        if isinstance(allowed[0], bool):
            return not allowed[0]
        if isinstance(allowed[0], str):
            return "not-a-known-value"
        value = max(allowed) + 7
    return int(value) if field.dataType.typeName() in ("integer", "long") else float(value)


def _key_of(row, index):
    """The identifying string values of a row (what the failure's example rows must show)."""
    import pandas as pd

    return {c: str(row[c]) for c in index if isinstance(row[c], (str, pd.Timestamp)) and c != "cluster"}


@pytest.fixture(scope="module")
def corrupted(spark, samples):
    """Per suite, one validation of a table where row i breaks only expectation i (row-level expectations) and one
    of a table whose schema breaks the type and column-set expectations. One GX run per table keeps this cheap;
    each test below then checks its own expectation's failure."""
    cache = {}

    def get(suite):
        if suite in cache:
            return cache[suite]
        doc = load_suite(suite)
        pdf, schema = samples[suite]
        bad, planted = pdf.copy().astype(object), {}
        extra = []
        for i, e in enumerate(doc["expectations"]):
            if e["type"] == "expect_compound_columns_to_be_unique":
                extra.append(bad.iloc[i].to_dict())
                planted[i] = (None, bad.iloc[i].to_dict())
            elif e["type"] in ROW_LEVEL:
                value = _bad_value(e, schema[e["kwargs"]["column"]])
                bad.at[i, e["kwargs"]["column"]] = value
                planted[i] = (value, bad.iloc[i].to_dict())
        bad = bad.__class__(list(bad.to_dict("records")) + extra)
        rows_summary = validate(spark.createDataFrame(bad, schema), suite)
        df = spark.createDataFrame(pdf, schema)
        typed = [e["kwargs"]["column"] for e in doc["expectations"] if e["type"] == "expect_column_values_to_be_of_type"]
        for column in typed:
            df = df.withColumn(column, F.col(column).cast("binary" if schema[column].dataType.typeName() == "string"
                                                          else "string"))
        for e in doc["expectations"]:
            if e["type"] == "expect_table_columns_to_match_set":
                df = df.drop(next(c for c in e["kwargs"]["column_set"] if c not in typed))
        schema_summary = validate(df, suite) if typed or any(e["type"] in SCHEMA_LEVEL for e in doc["expectations"]) else None
        cache[suite] = (rows_summary, schema_summary, planted)
        return cache[suite]

    return get


def test_clean_samples_pass_every_suite(spark, samples):
    for suite, (pdf, schema) in samples.items():
        assert len(pdf) > 0, suite
        summary = validate(spark.createDataFrame(pdf, schema), suite)
        assert summary.success, (suite, [f.describe() for f in summary.failures])


@pytest.mark.parametrize("suite, index", CASES, ids=[f"{s}[{i}]" for s, i in CASES])
def test_each_expectation_catches_its_corruption(corrupted, suite, index):
    doc = load_suite(suite)
    expectation = doc["expectations"][index]
    rows_summary, schema_summary, planted = corrupted(suite)
    summary = schema_summary if expectation["type"] in SCHEMA_LEVEL else rows_summary
    column = _column(expectation)
    hits = [f for f in summary.failures if f.expectation == expectation["type"] and f.column == column]
    assert hits, f"{suite}: {expectation} did not fail"
    failure = hits[0]
    assert failure.severity == expectation.get("severity", "critical")
    assert summary.critical == any(f.severity == "critical" for f in summary.failures)
    assert column.split(",")[0] in failure.describe()
    if expectation["type"] in SCHEMA_LEVEL:
        return
    value, row = planted[index]
    if value is not None:
        assert value in failure.unexpected_values or str(value) in map(str, failure.unexpected_values)
    key = _key_of(row, doc["meta"]["index_columns"])
    if key and expectation["type"] != "expect_compound_columns_to_be_unique":
        assert any(all(str(r.get(c)) == v for c, v in key.items()) for r in failure.rows), (key, failure.rows)
        assert all(f"{c}={v}" in failure.describe() for c, v in key.items()) or len(failure.rows) > 3


def test_the_cached_view_holds_only_what_its_suite_reads_and_fails_alike(spark, samples):
    for suite, (pdf, schema) in samples.items():
        doc = load_suite(suite)
        df = spark.createDataFrame(pdf, schema).withColumn("unread", F.lit("long text no expectation reads"))
        kept = runner.only_what_the_suite_reads(df, suite)
        assert set(kept.columns) == runner.suite_columns(suite) & set(df.columns), suite
        assert "unread" not in kept.columns and set(doc["meta"]["index_columns"]) <= set(kept.columns), suite
    # a column the suite needs and the table lacks is still GX's to report, not an error of the projection
    pdf, schema = samples["bronze.topic_stats"]
    df = spark.createDataFrame(pdf, schema).drop("backlog_size")
    whole, kept = (validate(frame, "bronze.topic_stats") for frame in (df, runner.only_what_the_suite_reads(df, "bronze.topic_stats")))
    found = lambda summary: [(f.expectation, f.column, f.severity, f.unexpected_count, f.unexpected_values)  # noqa: E731
                             for f in summary.failures]  # (GX's "observed" lists the columns it was given)
    assert found(kept) == found(whole) and any("missing column backlog_size" in f.describe() for f in kept.failures)


def _first_row_with(df, column: str, value):
    """``df`` with its first row's ``column`` set to ``value`` (a Column), the other rows as they are."""
    return df.limit(1).withColumn(column, value).unionByName(df.subtract(df.limit(1)))


@pytest.mark.parametrize("column", ["msg_rate_in", "msg_throughput_out"])
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_rates_must_be_finite(spark, samples, column, value):
    pdf, schema = samples["bronze.broker_reports"]
    clean = spark.createDataFrame(pdf, schema)  # (pandas NaN would arrive as null: plant it in Spark)
    bad = _first_row_with(clean, column, F.lit(value))
    summary = validate(bad, "bronze.broker_reports")
    (failure,) = [f for f in summary.failures if f.column == column]
    assert failure.severity == "critical" and failure.unexpected_count == 1


def test_suites_name_each_expectation_once():
    """Results are keyed by (expectation type, column): a suite must not repeat a pair."""
    for suite in views.SUITES:
        pairs = [(e["type"], _column(e)) for e in load_suite(suite)["expectations"]]
        assert len(pairs) == len(set(pairs)), suite


def _materialize_broker_reports(spark, landing, tmp_path, lake_root):
    from assets.definitions import all_assets
    from assets.quality import checks
    from assets.resources import LakeResource, LandingResource, ReportsResource, SparkResource

    selected = [a for a in all_assets if any(k.to_user_string() in ("bronze/broker_reports", "silver/broker_usage")
                                             for k in a.keys)]
    gate = [c for c in checks if "bronze_broker_reports" in str(c.check_keys)]
    lake = LakeResource(root=str(lake_root))
    result = dg.materialize(
        [*selected, *gate], partition_key=DEMO_DAY, raise_on_error=False, instance=dg.DagsterInstance.ephemeral(),
        resources={"spark": SparkResource(), "lake": lake, "landing": LandingResource(path=str(landing)),
                   "reports": ReportsResource(path=str(tmp_path))})
    (evaluation,) = [e for e in result.get_asset_check_evaluations() if e.check_name == "bronze_broker_reports"]
    materialized = {e.asset_key.to_user_string(): e.materialization.metadata
                    for e in result.get_asset_materialization_events()}
    return evaluation, materialized, lake.lake


def test_a_failed_bronze_gate_blocks_the_partitions_downstream_assets(spark, demo_landing, demo_lake_copy, tmp_path,
                                                                     monkeypatch):
    """What no row rule can quarantine (here a column the suite requires and the table lacks) still blocks, on a
    night run again (bronze resumed from the demo night: a changed suite is validated again all the same)."""
    suites = Path(shutil.copytree(runner.SUITES_DIR, tmp_path / "expectations"))
    path = suites / "bronze.broker_reports.json"
    suite = json.loads(path.read_text())
    suite["expectations"].append({"type": "expect_table_columns_to_match_set", "severity": "critical",
                                  "kwargs": {"column_set": ["broker", "no_such_column"], "exact_match": False}})
    path.write_text(json.dumps(suite))
    monkeypatch.setattr(runner, "SUITES_DIR", suites)
    evaluation, materialized, lake = _materialize_broker_reports(spark, demo_landing, tmp_path, demo_lake_copy)
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert "no_such_column" in evaluation.description
    assert "bronze/broker_reports" in materialized and "silver/broker_usage" not in materialized
    assert "resumed_from_run" in materialized["bronze/broker_reports"]  # ingest was not run again
    rows = lake.read(spark, "gold", "validation_results", DEMO_DAY).collect()
    (failed,) = [r for r in rows if not r.success]
    assert failed.expectation == "expect_table_columns_to_match_set" and failed.severity == "critical"


def test_every_suite_is_documented():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "data-quality.md").read_text()
    assert not [s for s in views.SUITES if f"`{s}`" not in doc]


def test_suites_validated_two_at_a_time_each_judge_their_own_frame(spark, samples):
    """Suites validated two at a time find what each finds alone, each in its own frame and under its own name."""
    bad = {}
    for suite in ("bronze.broker_reports", "bronze.topic_stats", "silver.broker_usage", "gold.load_model"):
        pdf, schema = samples[suite]
        clean = spark.createDataFrame(pdf, schema)
        between = next(e["kwargs"] for e in load_suite(suite)["expectations"]
                       if e["type"] == "expect_column_values_to_be_between" and e["kwargs"].get("min_value") is not None)
        # one row below its minimum in two of the four frames; the others stay clean
        below = F.lit(between["min_value"] - 1).cast(schema[between["column"]].dataType)
        bad[suite] = (_first_row_with(clean, between["column"], below)
                      if suite in ("bronze.topic_stats", "gold.load_model") else clean, between["column"])
    alone = {suite: validate(df, suite) for suite, (df, _) in bad.items()}
    heard = []
    together = runner.validate_all([(suite, lambda df=df: df) for suite, (df, _) in bad.items()], threads=2,
                                   done=lambda suite, summary: heard.append(suite))
    assert sorted(heard) == sorted(together) == sorted(bad)
    for suite, (_, column) in bad.items():
        found = [(f.expectation, f.column, f.unexpected_count) for f in together[suite].failures]
        assert found == [(f.expectation, f.column, f.unexpected_count) for f in alone[suite].failures], suite
        assert (found == [("expect_column_values_to_be_between", column, 1)]) == (suite in ("bronze.topic_stats", "gold.load_model")), suite
        assert together[suite].evaluated == len(load_suite(suite)["expectations"])
