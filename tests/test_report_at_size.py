"""The report the nightly job builds for a cluster of M's size (100 brokers), read in headless Chromium: the hot
brokers lead, the calm ones fold away, every section still opens, and the page stays a few screens long."""

from __future__ import annotations

from pathlib import Path

import pytest

from lb_pipeline.report.heat import natural_key
from tests.test_report import OUT
from tests.test_report_browser import _chromium

pytestmark = [pytest.mark.spark, pytest.mark.browser]
DAY = "2026-03-02"
# M's broker count; few topics and two snapshots keep the night short (the report's size is set by the brokers)
SHAPE = dict(brokers=100, topics=3_000, snapshots=2, interval_minutes=60, bundles_per_namespace=(4, 8),
             topics_per_namespace=150)


@pytest.fixture(scope="module")
def hundred_brokers(spark, tmp_path_factory):
    import dagster as dg

    from assets.definitions import all_assets
    from assets.resources import LakeResource, LandingResource, ReportsResource, SparkResource
    from lb_pipeline.snapshots.generate import Preset, generate
    from lb_pipeline.spark.lake import Lake

    landing, lake_root, reports = (tmp_path_factory.mktemp(n) for n in ("landing-100", "lake-100", "reports-100"))
    generate(landing, Preset("M-brokers", **SHAPE), seed=3, start=f"{DAY}T08:00:00Z", cluster_name="hundred")
    result = dg.materialize(all_assets, partition_key=DAY, instance=dg.DagsterInstance.ephemeral(),
                            resources={"spark": SparkResource(), "lake": LakeResource(root=str(lake_root)),
                                       "landing": LandingResource(path=str(landing)),
                                       "reports": ReportsResource(path=str(reports))})
    assert result.success
    (report,) = sorted(Path(reports).glob(f"*/{DAY}.html"))
    return report, Lake(str(lake_root))


def test_a_100_broker_night_reads_hottest_first_with_the_calm_brokers_folded(hundred_brokers, spark):
    from playwright.sync_api import sync_playwright

    report, lake = hundred_brokers
    summary = [r.asDict() for r in lake.read(spark, "gold", "broker_load_summary", DAY).collect()]
    assert len(summary) >= 100  # and any broker the night added
    ranked = sorted(summary, key=lambda r: (-r["peak_max_usage"], natural_key(r["broker"])))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.goto(report.as_uri())
            for section in ("actions", "findings", "nights", "load", "capacity", "strategies", "simulation", "splits"):
                assert page.get_by_test_id(section).is_visible(), section
            shown = page.locator("[data-testid=broker-table] tbody tr")
            assert shown.count() == 25 and not page.get_by_test_id("broker-table-rest").is_visible()
            names = [shown.nth(i).locator("td").first.inner_text() for i in range(shown.count())]
            assert names == [r["broker"] for r in ranked[:25]]
            page.get_by_test_id("broker-table-more").locator("summary").click()
            assert page.locator("[data-testid=broker-table-rest] tbody tr").count() == len(summary) - 25
            page.get_by_test_id("broker-table-more").locator("summary").click()
            height = page.evaluate("document.documentElement.scrollHeight")
            assert height < 14 * 900, f"{height} px: the brokers are not folded"
            OUT.mkdir(exist_ok=True)
            page.screenshot(path=str(OUT / "report-100-brokers.png"), full_page=True)
        finally:
            browser.close()
