"""Great Expectations suites: each expectation catches a deliberately corrupted table; clean tables pass;
a failed blocking check stops the downstream assets of that partition."""

import json
import shutil
from pathlib import Path

import dagster as dg
import pytest

from lb_pipeline.quality import views
from lb_pipeline.quality.runner import load_suite, validate
from tests.conftest import DEMO_DAY

pytestmark = pytest.mark.spark

CASES = [(suite, i) for suite in views.SUITES for i in range(len(load_suite(suite)["expectations"]))]


@pytest.fixture(scope="module")
def samples(lake, spark):
    """A small clean sample of every suite's validation view, as pandas (so corruptions are easy and cheap)."""
    out = {}
    for suite, (_, view, _) in views.SUITES.items():
        df = view(lambda ly, t: lake.read(spark, ly, t, DEMO_DAY))
        out[suite] = (df.limit(12).toPandas(), df.schema)
    return out


def _corrupt(pdf, expectation):
    kind, kw = expectation["type"], expectation["kwargs"]
    bad = pdf.copy()
    if kind == "expect_compound_columns_to_be_unique":
        return bad.__class__(list(bad.to_dict("records")) + [bad.iloc[0].to_dict()]), None
    col = kw["column"]
    if kind == "expect_column_values_to_not_be_null":
        bad[col] = bad[col].astype(object)
        bad.at[0, col] = None
        return bad, None
    if kind == "expect_column_values_to_be_between":
        value = (kw["min_value"] - 1) if kw.get("min_value") is not None else (kw["max_value"] + 1)
    elif kind == "expect_column_values_to_be_in_set":
        allowed = kw["value_set"]
        value = (not allowed[0]) if isinstance(allowed[0], bool) else (
            "not-a-known-value" if isinstance(allowed[0], str) else 7.0)
    else:
        raise AssertionError(f"no corruption for {kind}: add one")
    bad[col] = bad[col].astype(object)
    bad.at[0, col] = value
    return bad, value


def test_clean_samples_pass_every_suite(spark, samples):
    for suite, (pdf, schema) in samples.items():
        assert len(pdf) > 0, suite
        summary = validate(spark.createDataFrame(pdf, schema), suite)
        assert summary.success, (suite, [f.describe() for f in summary.failures])


@pytest.mark.parametrize("suite, index", CASES, ids=[f"{s}[{i}]" for s, i in CASES])
def test_each_expectation_catches_its_corruption(spark, samples, suite, index):
    expectation = load_suite(suite)["expectations"][index]
    pdf, schema = samples[suite]
    bad, value = _corrupt(pdf, expectation)
    summary = validate(spark.createDataFrame(bad, schema), suite)
    kw = expectation["kwargs"]
    column = kw.get("column") or ",".join(kw.get("column_list"))
    hits = [f for f in summary.failures if f.expectation == expectation["type"] and f.column == column]
    assert hits, f"{suite}: {expectation} did not fail"
    failure = hits[0]
    assert failure.severity == expectation.get("severity", "critical")
    assert summary.critical == any(f.severity == "critical" for f in summary.failures)
    assert column.split(",")[0] in failure.describe()
    if value is not None:
        assert value in failure.unexpected_values or str(value) in map(str, failure.unexpected_values)


def test_a_failed_bronze_gate_blocks_the_partitions_downstream_assets(spark, demo_landing, tmp_path):
    from assets.definitions import all_assets
    from assets.quality import checks
    from assets.resources import LakeResource, LandingResource, ReportsResource, SparkResource

    landing = Path(shutil.copytree(demo_landing, tmp_path / "landing"))
    for report in landing.rglob("lb/brokers/*.json"):  # a CPU limit that is not 100 per core
        doc = json.loads(report.read_text())
        doc["cpu"]["limit"] = 150.0
        report.write_text(json.dumps(doc))
    selected = [a for a in all_assets if any(k.to_user_string() in ("bronze/broker_reports", "silver/broker_usage")
                                             for k in a.keys)]
    gate = [c for c in checks if "bronze_broker_reports" in str(c.check_keys)]
    result = dg.materialize(
        [*selected, *gate], partition_key=DEMO_DAY, raise_on_error=False, instance=dg.DagsterInstance.ephemeral(),
        resources={"spark": SparkResource(), "lake": LakeResource(root=str(tmp_path / "lake")),
                   "landing": LandingResource(path=str(landing)), "reports": ReportsResource(path=str(tmp_path))})
    (evaluation,) = [e for e in result.get_asset_check_evaluations() if e.check_name == "bronze_broker_reports"]
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert "cpu_limit_mod_100" in evaluation.description
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert "bronze/broker_reports" in materialized and "silver/broker_usage" not in materialized
    rows = LakeResource(root=str(tmp_path / "lake")).lake.read(spark, "gold", "validation_results", DEMO_DAY).collect()
    assert any(r.column_name == "cpu_limit_mod_100" and not r.success and r.unexpected_count > 0 for r in rows)
