"""Whose rows a cluster's report counts as its own (data-quality failures of a landing of several clusters), and
which earlier nights it calls partial (the index of every night)."""

import pytest

from lb_pipeline.report.render import render_nightly
from tests.conftest import DEMO_DAY
from tests.test_report import _context


def test_the_index_marks_nights_that_stopped_half_way_with_or_without_an_earlier_report(tmp_path):
    from datetime import datetime, timezone

    from lb_pipeline.report.render import write_report

    write_report(tmp_path, "c1", "2026-01-13", "<html></html>")  # a night whose re-run was killed later
    started = datetime(2026, 1, 14, 2, 0, tzinfo=timezone.utc)
    partial = {"2026-01-13": {"run_id": "r", "started": started}, "2026-01-14": {"run_id": "s", "started": started},
               DEMO_DAY: {"run_id": "t", "started": started}}  # tonight's own run is not partial: it wrote this
    index = (write_report(tmp_path, "c1", DEMO_DAY, "<html></html>", partial).parent / "index.html").read_text()
    items = index.split('data-testid="nights"')[1].split("</ul>")[0].split("<li>")[1:]
    assert [i.split("</a>")[0].split(">")[-1] if "<a" in i else i.split(" ")[0] for i in items] == \
        [DEMO_DAY, "2026-01-14", "2026-01-13"]
    assert "partial" not in items[0]
    assert "<a" not in items[1] and "partial" in items[1] and "2026-01-14 02:00 UTC" in items[1]
    assert 'href="2026-01-13.html"' in items[2] and "report shown is of an earlier run" in items[2]


@pytest.mark.spark
def test_a_clusters_report_counts_its_own_failures_and_the_landings_but_not_another_clusters(spark):
    """Six clusters in one landing once each counted "4 critical failures" and listed the others' failing rows."""
    import json
    from datetime import datetime

    from lb_pipeline.quality.results import SCHEMA
    from lb_pipeline.report.quality import of_cluster, quality_trend, scoped

    def result(expectation, clusters, success=False, rows=None):
        return {"snapshot_date": DEMO_DAY, "suite": "silver.topic_bundle", "table_name": "silver/topic_bundle",
                "expectation": expectation, "column_name": "topic", "severity": "critical", "success": success,
                "unexpected_count": 0 if success else 3, "unexpected_values": None,
                "unexpected_rows": json.dumps(rows) if rows else None, "validated_at": datetime(2026, 1, 15),
                "clusters": clusters}

    shared_rows = [{"cluster": "a", "topic": "t1"}, {"cluster": "b", "topic": "t2"}]
    df = spark.createDataFrame([result("passed", None, success=True), result("of_a", ["a"]), result("of_b", ["b"]),
                                result("landing", []), result("both", ["a", "b"], rows=shared_rows),
                                result("old_lake", None)], SCHEMA)
    mine = {r["expectation"]: scoped(r.asDict(recursive=True), "a") for r in of_cluster(df, "a").collect()}
    assert set(mine) == {"passed", "of_a", "landing", "both", "old_lake"}
    assert mine["landing"]["landing"] and not mine["of_a"]["landing"] and not mine["old_lake"]["landing"]
    assert mine["both"]["shared"] == ["b"] and json.loads(mine["both"]["unexpected_rows"]) == shared_rows[:1]
    (night,) = [r.asDict() for r in quality_trend(df, DEMO_DAY, "a").collect()]
    assert (night["evaluated"], night["critical"]) == (5, 4)
    html = render_nightly(_context(checks=list(mine.values()),
                                   failed_checks=[c for c in mine.values() if not c["success"]]))
    assert html.count('data-testid="check-landing"') == 1 and html.count('data-testid="check-shared"') == 1
