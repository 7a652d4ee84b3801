"""Validation views of the simulation's gold tables (``quality/simulation_views.py``): each derived property is
computed from corrupted rows of the demo day's tables, and the suite fails naming the offending rows."""

import pytest

from lb_pipeline.quality import views
from lb_pipeline.quality.runner import validate
from tests.test_quality_views import _failure, _reader, _replace

pytestmark = pytest.mark.spark


def test_a_run_of_no_cycle_must_say_why_and_only_warns_that_the_night_was_not_simulated(spark, lake):
    import pandas as pd

    from lb_pipeline.transforms.simulation import NOT_SIMULATED

    picked = {}

    def corrupt(pdf):
        pdf = pdf.copy()
        picked["lost"] = pdf.at[0, "run_id"]
        pdf.at[0, "cycles"] = pdf.at[0, "cycles"] + 1  # one cycle more than the time series holds
        unsimulated = {**pdf.iloc[1].to_dict(), "cycles": 0, "usage_std_mean": None}
        extra = [{**unsimulated, "run_id": "Test-one-snapshot", "notes": NOT_SIMULATED + "the history needs two snapshots"},
                 {**unsimulated, "run_id": "Test-silent", "notes": ""}]
        return pd.DataFrame(pdf.to_dict("records") + extra, columns=pdf.columns)

    read = _reader(lake, spark, gold__simulation_runs=lambda df: _replace(spark, df, corrupt))
    summary = validate(views.simulation_runs(read), "gold.simulation_runs")
    assert [r["run_id"] for r in _failure(summary, "simulated_or_says_why").rows] == ["Test-silent"]
    assert [r["run_id"] for r in _failure(summary, "all_cycles_written").rows] == [picked["lost"]]
    (cycles,) = [f for f in summary.failures if f.column == "cycles"]
    assert cycles.severity == "warning" and sorted(r["run_id"] for r in cycles.rows) == ["Test-one-snapshot", "Test-silent"]
    assert {f.column for f in summary.failures} == {"simulated_or_says_why", "all_cycles_written", "cycles"}


def test_a_loss_placement_scored_off_by_more_than_it_placed_is_a_counting_failure(spark, lake):
    import pandas as pd

    def corrupt(pdf):
        good = {**pdf.iloc[0].to_dict(), "orphans_lost": 3, "orphans_reowned": 2, "orphans_agree": 1,
                "orphans_count_off": 1, "orphans_traffic_off": 0.25}
        rows = [good, {**good, "cluster": "too-many-off", "orphans_count_off": 3},
                {**good, "cluster": "share-above-one", "orphans_traffic_off": 1.5}]
        return pd.DataFrame(rows, columns=pdf.columns)

    read = _reader(lake, spark, gold__simulation_validation=lambda df: _replace(spark, df, corrupt))
    summary = validate(views.simulation_validation(read), "gold.simulation_validation")
    rows = _failure(summary, "matches_counted_once").rows
    assert sorted(r["cluster"] for r in rows) == ["share-above-one", "too-many-off"]
