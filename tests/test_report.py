"""The nightly report: escaping and what each section says (no Spark), and per-cluster reports of the night.
The report in headless Chromium: ``test_report_browser.py``."""

from html import unescape
from pathlib import Path

import pytest

from lb_pipeline.report.heat import HeatRows, heat_rows
from lb_pipeline.report.nights import nights_context
from lb_pipeline.report.render import render_index, render_nightly
from lb_pipeline.report.simulation import decided
from lb_pipeline.report.waves import check_wave
from tests.conftest import DEMO_DAY

EVIL = "<script>alert(1)</script>"
OUT = Path(__file__).resolve().parents[1] / "test-output"


def _context(**over):
    ctx = {
        "cluster": f"c{EVIL}", "day": DEMO_DAY, "latest": "x", "snapshot_count": 1, "broker_count": 1,
        "strategy": "ThresholdShedder", "algorithm": "range_equally_divide", "grace_minutes": 30, "profile": "pulsar-4.0",
        "config_changes": [], "config_notes": [f"note{EVIL}"], "config_taken_otherwise": [], "replayed": True, "legacy": None, "strategy_changed": False,
        "actions": {"splits": [], "unloads": [{"bundle": f"t/ns/{EVIL}", "source": "b1", "destination": "b2", "why": "w",
                                               "command": f"pulsar-admin namespaces unload 't/ns' --bundle '{EVIL}'"}]},
        "heat": {"rows": HeatRows([f"b{EVIL}"], [f"calm{EVIL}"], 0.85, 0.10), "times": ["00:00"],
                 "values": {(f"b{EVIL}", "00:00"): 0.5, (f"calm{EVIL}", "00:00"): 0.4}},
        "brokers": [], "strategies": [{"name": "ThresholdShedder", "configured": True, "day_unloads": 1, "now_unloads": 1,
                                       "sources": ["b1"], "destinations": ["b2"], "spread_before": 1.0, "spread_after": 0.5}],
        "hot": [{"bundle": f"t/ns/{EVIL}", "owner": "b1", "triggers": {"modular": "split"}, "algorithms": [],
                 "detail": EVIL, "share": 0.9}],
        "near": [{"bundle": f"t/ns/{EVIL}", "owner_broker": "b1", "topics": 0.9, "sessions": 0.1, "msg_rate": 0.5,
                  "throughput": 0.2}],
        "near_cap": [], "cap": 128, "violations": [], "misplaced": [], "checks": [{"success": False}],
        "failed_checks": [{"suite": "bronze.x", "expectation": "e", "column_name": "c", "severity": "critical",
                           "unexpected_count": 1, "unexpected_values": EVIL, "unexpected_rows": f'[{{"broker": "{EVIL}"}}]',
                           "landing": False, "shared": [f"c2{EVIL}"]}],
        "quality_trend": [{"snapshot_date": EVIL, "evaluated": 3, "critical": 1, "warnings": 0, "partial": True}],
        "quarantined": [{"bronze_table": f"t{EVIL}", "landing": True, "rows": 2, "example": EVIL}],
        "unservable": [{"namespace": "t/ns", "topic": f"persistent://t/ns/{EVIL}", "snapshots": 2}],
        "aa_groups": 1, "aa_blind": [], "usage_notes": [f"b{EVIL} and b2 run on one host"], "inputs_note": f"approximated {EVIL}",
        "coverage_notes": [f"At 03:00 UTC the load reports of 1 of 2 brokers did not land (b{EVIL})"],
        "replay_accuracy": {"strategy": EVIL, "predicted": 3, "moved": 4, "confirmed": 2, "destination_agrees": 1,
                            "precision": 2 / 3, "recall": 0.5},
        "docs_vs_code": [], "provenance": {"run_id": "r", "partition": DEMO_DAY, "generated_at": "now", "versions": {},
                                             "resumed": {f"run{EVIL}": ["bronze_tables", "silver__broker_usage"]}},
        "simulation": {"generated": False, "runs": [{"strategy": "AvgShedder", "params": f"k={EVIL}", "usage_std_mean": 0.1, "spread": 0.08,
                                 "peak_usage": 0.97, "pinned_broker_minutes": 2, "on_front": True,
                                 "simulated": True,
                                 "max_over_mean_p95": 1.2, "overloaded_broker_minutes": 3, "unloads": 2, "splits": 1, "ping_pongs": 0,
                                 "reconnections": 40, "events": 1, "events_converged": 1}],
                       "recommendation": {"strategy": "AvgShedder", "rationale": f"because {EVIL}",
                                          "broker_conf": f"x={EVIL}", "commands": [f"pulsar-admin {EVIL}"]},
                       "series": {f"AvgShedder {EVIL}": [0.1, 0.2]}, "labels": [(0, "00:00"), (1, "01:00")],
                       "notes": ["bundle traffic interpolated"],
                       "validation": {"strategy": EVIL, "matched_unloads": 3, "recorded_unloads": 4,
                                      "predicted_unloads": 3, "precision": 1.0, "recall": 0.75, "destinations_agree": 2}},
        "capacity": None, "findings": [{"severity": "warning", "detector": "idle broker while others run hot", "items": [
            {"severity": "warning", "detector": "idle broker while others run hot", "subject": f"b{EVIL}",
             "summary": f"idle {EVIL}", "snapshots": 2, "evidence": f'[{{"broker": "{EVIL}"}}]', "action": f"unload {EVIL}"}]}],
        "findings_trend": [{"night": DEMO_DAY, "critical": 1, "warning": 2, "info": 0},
                           {"night": EVIL, "critical": 0, "warning": 1, "info": 3}],
        "nights": nights_context([], f"c{EVIL}", DEMO_DAY),
    }
    ctx.update(over)
    ctx.setdefault("decision", decided(ctx["simulation"], ctx["strategy"]))
    actions = ctx["actions"] = dict(ctx["actions"])
    actions.setdefault("strategy", ctx["decision"]["act_as"])
    actions.setdefault("check", check_wave(actions["unloads"], {"b1": 100.0, "b2": 10.0}, {"b1": 0.9, "b2": 0.1},
                                           {}, {a["bundle"]: 40.0 for a in actions["unloads"]})
                       if actions["unloads"] else None)
    return ctx


def test_text_from_inputs_is_escaped_everywhere():
    html = render_nightly(_context())
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "no split can relieve it" in html and "90.0%" in html  # the near-threshold row, with units
    assert "its CRC-32 is 0xffffffff" in html  # a topic Pulsar cannot look up is named
    assert '<p class="warn" data-testid="config-not-running">note&lt;script&gt;' in html  # a strategy not running yet
    assert "precision 66.7%, recall 50.0%" in " ".join(html.split())
    assert "predicted 3 of the 4 unloads the cluster made (precision 100.0%, recall 75.0%" in html
    assert "<script>" not in render_index([{"day": EVIL, "file": "x.html", "partial": {"run_id": EVIL, "started": None}}],
                                          EVIL)


def test_a_large_cluster_shows_its_hot_brokers_first_and_folds_the_calm_ones():
    values = {(f"broker-{i}", "00:00"): 0.30 for i in range(100)}
    values[("broker-57", "00:00")], values[("broker-3", "00:00")] = 0.95, 0.70
    html = render_nightly(_context(heat={"rows": heat_rows(values, ["00:00"], 0.85, 0.10), "times": ["00:00"],
                                         "values": values}))
    shown, folded = html.split('data-testid="heatmap-calm"')
    assert shown.index(">broker-57<") < shown.index(">broker-3<") and ">broker-0<" not in shown
    assert "98 more brokers stayed in the comfortable band" in folded and ">broker-99<" in folded


def test_a_night_too_short_to_simulate_says_so_instead_of_figures():
    why = "no recommendation: not simulated: cluster 'c': the history needs two snapshots or more, it has 1"
    empty = {k: None for k in ("usage_std_mean", "spread", "peak_usage", "pinned_broker_minutes", "max_over_mean_p95",
                               "overloaded_broker_minutes", "unloads", "splits", "ping_pongs", "reconnections", "events",
                               "events_converged")}
    sim = {"runs": [{**empty, "strategy": s, "params": "as configured", "simulated": False, "on_front": False}
                    for s in ("no-balancing", "AvgShedder")],
           "recommendation": {"strategy": None, "rationale": why, "broker_conf": "", "commands": []},
           "series": {}, "labels": [], "notes": [], "validation": None}
    html = render_nightly(_context(simulation=sim))
    table = html[html.index('data-testid="simulation-table"'):html.index('data-testid="pareto-chart"')]
    assert table.count("not simulated") == 2 and "None" not in table and "cycle. . " not in html
    assert why.replace("'", "&#39;") in html
    assert "<circle" not in html[html.index('data-testid="pareto-chart"'):html.index('data-testid="simulation-chart"')]


def test_a_plugin_strategy_is_said_not_to_be_replayed_instead_of_moving_nothing():
    html = render_nightly(_context(strategy="CustomShedder", replayed=False,
                                   actions={"splits": [], "unloads": []}))
    assert 'data-testid="not-replayed"' in html and "CustomShedder would move nothing" not in html


def test_a_setting_pulsar_takes_otherwise_than_it_reads_is_said_at_the_top():
    assert 'data-testid="config-taken-otherwise"' not in render_nightly(_context())
    html = render_nightly(_context(config_taken_otherwise=[f"wraps{EVIL}"]))
    assert 'data-testid="config-taken-otherwise"' in html and EVIL not in html


def test_a_cluster_on_the_deprecated_load_manager_is_told_why_instead_of_called_a_plugin():
    html = render_nightly(_context(strategy="SimpleLoadManagerImpl", replayed=False, legacy=f"blank{EVIL}",
                                   actions={"splits": [], "unloads": []}))
    said = html[html.index('data-testid="not-replayed"'):]
    said = said[:said.index("</p>")]
    assert "run SimpleLoadManagerImpl, Pulsar's deprecated load manager (blank" in said and "a plugin" not in said
    assert EVIL not in html


def test_the_simulations_validation_says_when_the_configured_strategy_changed_during_the_night():
    assert 'data-testid="validation-strategy-changed"' not in render_nightly(_context())
    changed = render_nightly(_context(strategy_changed=True))
    assert 'data-testid="validation-strategy-changed"' in changed and "each snapshot under the one the leader ran" in changed


def test_a_night_where_no_snapshot_landed_says_so_first():
    html = render_nightly(_context(snapshot_count=0, actions={"splits": [], "unloads": []},
                                   quarantined=[{"bronze_table": "snapshots", "rows": 4, "example": "x", "landing": False},
                                                {"bronze_table": "topic_stats", "rows": 25, "example": "y", "landing": True}]))
    first = html[html.index('id="actions"'):html.index('id="findings"')]
    assert "No snapshot of this night could be used" in first and "29 files or rows were quarantined" in first
    assert "Nothing: no bundle needs splitting" not in first


def test_report_is_self_contained():
    html = render_nightly(_context())
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html
    assert "<link" not in html and "src=" not in html


def test_findings_show_tonight_and_the_last_nights_and_a_clean_night_says_so():
    section = render_nightly(_context()).split('data-testid="findings"')[1].split("</section>")[0]
    assert section.split('data-testid="findings-trend"')[1].count("<tr>") == 3  # header + two nights
    assert "idle broker while others run hot" in section and "unload &lt;script&gt;" in section
    clean = render_nightly(_context(findings=[], findings_trend=[])).split('data-testid="findings"')[1]
    assert "No known pathology tonight." in clean.split("</section>")[0]


def test_last_nights_compare_tonight_with_the_means_and_a_first_night_says_there_is_nothing_yet():
    first = render_nightly(_context()).split('data-testid="nights"')[1].split("</section>")[0]
    assert 'data-testid="nights-none"' in first and "nights-compare" not in first
    rows = [{"cluster": f"c{EVIL}", "snapshot_date": f"2026-01-{d:02d}", "peak_usage": 0.5 + d / 100, "mean_usage": 0.3,
             "brokers": 4, "brokers_overloaded": d % 2, "unloads": d, "splits": 0, "critical_findings": 0,
             "warning_findings": 1} for d in range(1, 16)]
    section = render_nightly(_context(nights=nights_context(rows, f"c{EVIL}", DEMO_DAY))).split(
        'data-testid="nights"')[1].split("</section>")[0]
    compare = section.split('data-testid="nights-compare"')[1].split("</table>")[0]
    assert "65.0%" in compare and "61.0%" in compare  # tonight's peak, the mean of the 7 nights before
    assert "14 of the last 30" in section and section.split('data-testid="nights-recent"')[1].count("<tr>") == 8


def test_a_report_written_to_a_relative_folder_is_named_by_an_absolute_path(tmp_path, monkeypatch):
    """``LB_REPORTS_DIR=reports-out``: the asset links the report as a file:// URI, which needs an absolute path."""
    from lb_pipeline.report.render import write_report

    monkeypatch.chdir(tmp_path)
    path = write_report("reports-out", "c1", DEMO_DAY, "<html></html>")
    assert path.is_absolute() and path == tmp_path / "reports-out" / "c1" / f"{DEMO_DAY}.html"
    assert path.as_uri().startswith("file:///") and (path.parent / "index.html").is_file()


@pytest.mark.spark
def test_bundles_near_a_split_limit_skip_limits_of_zero_or_less(spark):
    """A hostile config's limit of 0 once divided by zero under ANSI SQL and failed the report."""
    from lb_pipeline.model.config import PulsarConfig
    from lb_pipeline.report.context import _near_limits

    stats = spark.createDataFrame([("a/b/0x0_0x1", "broker-0", 900, 10, 1.0, 1.0, 0.0, 0.0)],
                                  "bundle string, owner_broker string, topics long, sessions long, msg_rate_in double, "
                                  "msg_rate_out double, msg_throughput_in double, msg_throughput_out double")
    near = _near_limits(stats, PulsarConfig()).collect()  # 900 of 1,000 topics
    assert [(r["bundle"], round(r["worst"], 2)) for r in near] == [("a/b/0x0_0x1", 0.9)]
    zero = PulsarConfig({k: "0" for k in ("loadBalancerNamespaceBundleMaxTopics", "loadBalancerNamespaceBundleMaxSessions",
                                          "loadBalancerNamespaceBundleMaxMsgRate", "loadBalancerNamespaceBundleMaxBandwidthMbytes")})
    assert _near_limits(stats, zero).collect() == []


@pytest.mark.spark
def test_each_cluster_of_a_night_gets_a_report_of_its_own_rows(lake, spark):
    """Two clusters in one landing once got one report, of whichever snapshot came last, over both clusters' rows."""
    from lb_pipeline.model.config import PulsarConfig
    from lb_pipeline.report.context import build_context, night_clusters
    from lb_pipeline.spark.lake import Lake

    assert night_clusters(spark, lake, DEMO_DAY) == ["demo-cluster"]
    assert night_clusters(spark, Lake(lake.root + "/nothing"), DEMO_DAY) == ["unknown"]
    # the demo cluster's own report is the one test_report_browser.test_demo_report_in_headless_chromium reads
    other = build_context(spark, lake, DEMO_DAY, "another-cluster", PulsarConfig())
    assert other["cluster"] == "another-cluster" and other["snapshot_count"] == 0
    assert not other["brokers"] and not other["heat"]["values"] and not other["hot"] and other["simulation"]["runs"] == []
    assert other["checks"]  # the night's data-quality results are per table, shared


@pytest.mark.spark
def test_the_splits_to_do_are_those_of_the_trigger_the_configured_load_manager_runs(lake, spark):
    """On the extensible load manager every broker's SplitScheduler splits (hit counts, instantaneous stats); the
    report listed the modular BundleSplitterTask's splits for every cluster. The triggers are replayed with bundles
    over 2,000 msg/s hot (the demo's last snapshot has one hot bundle, of one topic: no split relieves it), and
    each report sees only one trigger's rows, so its list is empty if it reads the other one."""
    from pyspark.sql import functions as F

    from lb_pipeline.model.config import EXTENSIBLE_LOAD_MANAGER, PulsarConfig
    from lb_pipeline.report.context import build_context
    from lb_pipeline.spark.lake import Lake
    from lb_pipeline.transforms import splits

    def read(layer, table):
        return lake.read(spark, layer, table, DEMO_DAY)

    hot = PulsarConfig({"loadBalancerNamespaceBundleMaxMsgRate": "2000"})
    triggers = splits.split_triggers(read("bronze", "broker_reports"), read("bronze", "bundle_reports"),
                                     read("silver", "bundle_time_averages"), read("bronze", "namespaces"), hot).cache()
    replayed = {"split_triggers": triggers,
                "split_recommendations": splits.split_boundaries(triggers, read("bronze", "topic_stats"), hot)}

    class OneTrigger(Lake):
        def read(self, spark, layer, table, partition=None):
            df = replayed.get(table) if layer == "gold" and table in replayed else super().read(spark, layer, table, partition)
            return df.where(F.col("trigger") == self.trigger) if table == "split_triggers" else df

    latest = triggers.agg(F.max("snapshot_ts")).first()[0]
    for manager, trigger, says in (("", "modular", "the leader's BundleSplitterTask"),
                                   (EXTENSIBLE_LOAD_MANAGER, "extensible", "every broker's SplitScheduler")):
        split = {r.bundle for r in triggers.where((F.col("snapshot_ts") == latest) & (F.col("trigger") == trigger)
                                                 & F.col("selected")).collect()}
        one = OneTrigger(lake.root)
        one.trigger = trigger
        ctx = build_context(spark, one, DEMO_DAY, "demo-cluster", hot.overridden(loadManagerClassName=manager)
                            if manager else hot)
        listed = {a["bundle"] for a in ctx["actions"]["splits"]}
        kept_whole = {b["bundle"] for b in ctx["hot"] if (b["share"] or 0) >= 0.8}  # no split relieves them
        assert listed and listed == split - kept_whole, trigger
        assert f"as {says} would" in unescape(render_nightly(ctx))


def test_anti_affinity_moves_pulsar_would_not_make_are_warnings_and_uneven_spreads_pulsar_leaves_are_not():
    from datetime import datetime

    uneven = {"message": "broker b1 holds 2 namespaces of group g while another broker holds 1", "namespaces": ["t/a", "t/b"]}
    moved = {"snapshot_ts": datetime(2026, 1, 15, 3, 0), "message": f"bundle t/b/0x0_0xf of group g moved from b2 to b1{EVIL}"}
    html = render_nightly(_context(violations=[uneven], misplaced=[moved]))
    section = html[html.index('data-testid="anti-affinity"'):]
    section = section[:section.index("</section>")]
    assert 'class="warn" data-testid="aa-misplaced">03:00: bundle t/b/0x0_0xf of group g moved from b2 to b1' in section
    assert 'data-testid="aa-uneven"' in section and '<p class="warn">broker b1 holds' not in section
    assert EVIL not in html
    calm = render_nightly(_context(violations=[], misplaced=[]))
    assert "are spread evenly" in calm and 'data-testid="aa-misplaced"' not in calm
