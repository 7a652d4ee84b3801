"""The nightly report in headless Chromium: the demo night's report, and a 1000-broker one (preset L's size)."""

import shutil
from pathlib import Path

import pytest

from lb_pipeline.report.heat import heat_rows
from lb_pipeline.report.render import render_nightly
from tests.conftest import DEMO_DAY
from tests.test_report import OUT, _context
from tests.test_report_capacity import _capacity


# every chart label inside its chart and clear of the others (at 1366 px, as laid out by Chromium)
_CLIPPED_OR_OVERLAPPING = """() => {
  const bad = [];
  for (const svg of document.querySelectorAll('svg')) {
    if (!svg.getBoundingClientRect().width) continue;  // a folded <details>
    const box = svg.getBoundingClientRect();
    const texts = [...svg.querySelectorAll('text')].map(t => [t.textContent, t.getBoundingClientRect()])
      .filter(([, r]) => r.width > 0);
    for (const [name, r] of texts) {
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        bad.push('clipped: ' + name);
    }
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      const [a, ra] = texts[i], [b, rb] = texts[j];
      const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
      const h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
      if (w > 1 && h > 1) bad.push('overlap: ' + a + ' / ' + b);
    }
  }
  return bad;
}"""


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("the browser test needs Debian's Chromium: apt-get install -y chromium")
    return path


@pytest.mark.browser
@pytest.mark.spark
def test_demo_report_in_headless_chromium(pipeline_run, lake, spark):
    from playwright.sync_api import sync_playwright

    result, _, reports_root = pipeline_run
    (report,) = sorted(Path(reports_root).glob(f"*/{DEMO_DAY}.html"))
    unloads = {r["strategy"]: r["count"] for r in
               lake.read(spark, "gold", "shedding_decisions", DEMO_DAY).groupBy("strategy").count().collect()}
    usage = lake.read(spark, "silver", "broker_usage", DEMO_DAY)
    cells = usage.select("broker").distinct().count() * usage.select("snapshot_ts").distinct().count()
    evaluated = lake.read(spark, "gold", "validation_results", DEMO_DAY).count()
    runs = lake.read(spark, "gold", "simulation_runs", DEMO_DAY).count()
    (recommended,) = lake.read(spark, "gold", "recommendations", DEMO_DAY).select("strategy").collect()
    findings = lake.read(spark, "gold", "pathologies", DEMO_DAY).select("detector").distinct().count()
    losses = lake.read(spark, "gold", "capacity_forecast", DEMO_DAY).where("scope = 'loss'").count()
    OUT.mkdir(exist_ok=True)
    requests = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.on("request", lambda r: requests.append(r.url))
            page.goto(report.as_uri())
            for section in ("decision", "actions", "findings", "load", "capacity", "strategies", "simulation", "splits",
                            "anti-affinity", "quality", "provenance"):
                assert page.get_by_test_id(section).is_visible(), section
            assert page.locator("[data-testid=findings-table] tbody tr").count() == findings
            assert "Not enough history" in page.get_by_test_id("capacity-headline").inner_text()
            assert page.locator("[data-testid=loss-table] tbody tr").count() == losses
            assert page.locator("[data-testid=heatmap] svg rect.cell").count() == cells
            assert page.locator("[data-testid=strategy-chart] svg").count() == 1
            assert page.get_by_test_id("near-threshold").is_visible()
            assert page.locator("[data-testid=simulation-table] tbody tr").count() == runs
            assert page.locator("[data-testid=simulation-chart] svg polyline").count() == runs
            assert page.locator("[data-testid=pareto-chart] svg circle").count() == runs
            decision = page.get_by_test_id("recommendation").inner_text()
            if recommended.strategy:
                assert decision.startswith(f"Change to {recommended.strategy}.")
            # one answer: the moves proposed are those of the strategy the decision names
            named = recommended.strategy or "ThresholdShedder"  # the demo cluster's configured strategy
            assert decision.startswith((f"Change to {named}.", f"Keep {named}.", "No decision."))
            for heading in page.locator("[data-testid=actions] h3").all_inner_texts():
                assert "Wave" not in heading or "split" in heading or named in heading, heading
            page.get_by_test_id("decision").screenshot(path=str(OUT / "decision.png"))
            assert page.evaluate(_CLIPPED_OR_OVERLAPPING) == [], "chart labels clipped or drawn over each other"
            assert page.locator("[data-testid=pareto-chart] svg text").count() > runs  # axis values beside the labels
            rows = page.locator("[data-testid=strategy-table] tbody tr")
            for i in range(rows.count()):
                cols = rows.nth(i).locator("td")
                name = cols.nth(0).inner_text().split(" ")[0]
                assert int(cols.nth(6).inner_text()) == unloads.get(name, 0), name
            assert DEMO_DAY in page.get_by_test_id("title").inner_text()
            night = page.locator("[data-testid=quality-trend] tbody tr").first.locator("td")
            assert night.nth(0).inner_text() == DEMO_DAY and int(night.nth(1).inner_text()) == evaluated
            page.screenshot(path=str(OUT / "nightly-report.png"), full_page=True)
            page.goto((report.parent / "index.html").as_uri())
            assert page.get_by_test_id("nights").locator("a").first.inner_text() == DEMO_DAY
        finally:
            browser.close()
    assert requests and all(u.startswith("file:") for u in requests), [u for u in requests if not u.startswith("file:")]


@pytest.mark.browser
def test_a_1000_broker_report_stays_readable_in_headless_chromium(tmp_path):
    """Preset L's size: the hot brokers lead the heatmap and the table, everything calm is folded, and the page
    opens no longer than a few screens."""
    from playwright.sync_api import sync_playwright

    times = [f"{h:02d}:00" for h in range(24)]
    hot = {f"broker-{i}" for i in (7, 123, 640, 999)}
    values = {(f"broker-{i}", t): (0.93 if f"broker-{i}" in hot else 0.35) for i in range(1000) for t in times}
    brokers = sorted(({"broker": f"broker-{i}", "mean_max_usage": 0.35, "peak_max_usage": values[(f"broker-{i}", "00:00")],
                       "driving_resource": "cpu", "mean_msg_rate": 1.0, "mean_throughput": 1.0, "snapshots_over_85pct": 0}
                      for i in range(1000)), key=lambda b: -b["peak_max_usage"])
    ctx = _context(cluster="big", heat={"rows": heat_rows(values, times, 0.85, 0.10), "times": times, "values": values},
                   brokers=brokers, capacity=_capacity(10))
    page_file = tmp_path / "big.html"
    page_file.write_text(render_nightly(ctx), encoding="utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.goto(page_file.as_uri())
            assert page.locator("[data-testid=broker-table] tbody tr").count() == 25
            assert page.locator("[data-testid=broker-table] tbody tr").first.locator("td").first.inner_text() in hot
            assert not page.get_by_test_id("heatmap-calm").locator("svg").is_visible()
            assert not page.get_by_test_id("broker-table-rest").is_visible()
            height = page.evaluate("document.documentElement.scrollHeight")
            assert height < 12 * 900, f"{height} px: the calm brokers are not folded"
            OUT.mkdir(exist_ok=True)
            page.screenshot(path=str(OUT / "report-1000-brokers.png"), full_page=True)
            page.get_by_test_id("broker-table-more").locator("summary").click()
            assert page.locator("[data-testid=broker-table-rest] tbody tr").count() == 975
        finally:
            browser.close()
