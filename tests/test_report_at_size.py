"""The report the nightly job builds for a cluster of M's size (100 brokers), read in headless Chromium: the hot
brokers lead, the calm ones fold away, every section still opens, and the page stays a few screens long."""

from __future__ import annotations

import pytest

from lb_pipeline.report.heat import natural_key
from tests.conftest import REAL_DAY as DAY
from tests.test_report import OUT
from tests.test_report_browser import _chromium

pytestmark = [pytest.mark.spark, pytest.mark.browser]
CLUSTER = "hundred"  # M's broker count, in the night of the real recording (conftest.real_and_hundred_night)


@pytest.fixture(scope="module")
def hundred_brokers(real_and_hundred_night):
    result, lake, reports = real_and_hundred_night
    assert result.success
    return reports / CLUSTER / f"{DAY}.html", lake


def test_a_100_broker_night_reads_hottest_first_with_the_calm_brokers_folded(hundred_brokers, spark):
    from playwright.sync_api import sync_playwright

    report, lake = hundred_brokers
    summary = [r.asDict() for r in lake.read(spark, "gold", "broker_load_summary", DAY)
               .where(f"cluster = '{CLUSTER}'").collect()]
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
