"""Gather what the nightly report shows from the day's silver and gold tables.

Only aggregated, small data reaches the driver (brokers × snapshots, decisions, flagged bundles, check results);
topic-level rows stay in Spark.
"""

from __future__ import annotations

from datetime import datetime, timezone

from pyspark.sql import functions as F

from lb_pipeline.algorithms.splits import automatic_algorithm
from lb_pipeline.algorithms.splits.triggers import limit_notes
from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import EXTENSIBLE_LOAD_MANAGER, PulsarConfig
from lb_pipeline.model.load_manager import configured_strategy, legacy_reason
from lb_pipeline.report import trust
from lb_pipeline.report.quality import of_cluster, quality_trend, scoped
from lb_pipeline.report.heat import heat_rows as order_heat
from lb_pipeline.report.heat import natural_key
from lb_pipeline.report.nights import findings_trend, nights_context
from lb_pipeline.report.planning import capacity_context, findings_context
from lb_pipeline.report.simulation import decided, generated, simulation_context
from lb_pipeline.report.waves import check_wave, rates_after, spread
from lb_pipeline.transforms import silver
from lb_pipeline.transforms.night_runs import partial_nights
from lb_pipeline.transforms.nights import gold_night_metrics
from lb_pipeline.transforms.pathologies import ONE_TOPIC_SHARE

DOCS_VS_CODE = [
    "topic_count_equally_divide: the docs' 6-topic example cuts at 0x50000000; the code cuts at 0x4d000000.",
    "flow_or_qps_equally_divide: cuts carry a +1 and limits are MiB, so the docs' 0x19500000 is 0x1c800001.",
    "Broker usage percentages are computed in 32-bit float: 30/100 is 30.0000019 %.",
    "ThresholdShedder sheds (usage − average − threshold + 5 %) of throughput, not 'down to 5 % below average'.",
    "OverloadShedder sheds as many bundles as needed, largest by throughput; heap memory does not count.",
    "AvgShedder with the default minUnloadMessage (1000 msg/s) does not move the docs' 250 msg/s example.",
]
TABLES = [("bronze", "snapshots"), ("bronze", "quarantine"), ("silver", "broker_usage"), ("silver", "bundle_stats"),
          ("gold", "split_triggers"), ("gold", "split_recommendations"), ("gold", "shedding_decisions"),
          ("gold", "anti_affinity_audit"), ("gold", "broker_load_summary"), ("gold", "validation_results"),
          ("gold", "load_model"), ("gold", "simulation_runs"), ("gold", "recommendations"),
          ("gold", "capacity_forecast"), ("gold", "pathologies")]


def _rows(df) -> list[dict]:
    return [r.asDict(recursive=True) for r in df.collect()]


def night_clusters(spark, lake, day: str) -> list[str]:
    """The clusters of a night, one report each: those with a snapshot that landed, and those whose every file was
    quarantined (named by their folders), so that a night nothing of landed sits beside the cluster's others."""
    found: set[str] = set()
    for table in ("snapshots", "quarantine"):
        if lake.exists(spark, "bronze", table):
            found.update(r["cluster"] for r in lake.read(spark, "bronze", table, day).where(F.col("cluster").isNotNull())
                         .select("cluster").distinct().collect())
    return sorted(found) or ["unknown"]


def build_context(spark, lake, day: str, cluster: str, config: PulsarConfig | ClusterConfigs, run_id: str = "",
                  resumed: dict[str, list[str]] | None = None) -> dict:
    """Everything the nightly report of ``cluster`` shows (its rows of every table, and the rows of no cluster: a
    file outside any cluster folder). Its few dozen small queries wait for nothing but the night's last snapshot,
    so they run four at a time, each one's planning, Delta log and scheduling overlapping the others': one at a
    time, the driver's latency made most of the report's 11 s on M (8 s so, the same HTML)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="report") as pool:
        ctx = _context(pool.submit, spark, lake, day, cluster, ClusterConfigs.of_any(config), run_id)
    ctx["provenance"]["resumed"] = resumed or {}  # run → the steps it computed that this run did not compute again
    return ctx


def _context(soon, spark, lake, day: str, cluster: str, configs: ClusterConfigs, run_id: str) -> dict:
    def read(layer, table):
        if not lake.exists(spark, layer, table):
            return None
        df = lake.read(spark, layer, table, day)  # gold/validation_results is per table, not per cluster
        return df.where((F.col("cluster") == cluster) | F.col("cluster").isNull()) if "cluster" in df.columns else df

    def rows_soon(df):
        return soon(_rows, df) if df is not None else _done([])

    config = configs.of(cluster)  # the current one: what the report recommends starts from it
    strategy = configured_strategy(config)
    algorithm = automatic_algorithm(config)  # the one Pulsar splits with
    # the extensible load manager splits with every broker's SplitScheduler, the others with the leader's task
    split_trigger = "extensible" if config["loadManagerClassName"] == EXTENSIBLE_LOAD_MANAGER else "modular"
    grace = config.get_int("loadBalancerSheddingGracePeriodMinutes")
    usage, snapshots, stats_df = read("silver", "broker_usage"), read("bronze", "snapshots"), read("silver", "bundle_stats")
    decisions_df, results = read("gold", "shedding_decisions"), read("gold", "validation_results")
    namespaces, ownership, reports = (read("bronze", t) for t in ("namespaces", "ownership", "broker_reports"))
    layouts = silver.layouts(namespaces, ownership) if namespaces is not None and ownership is not None else None
    topic_bundle, quarantine = read("silver", "topic_bundle"), read("bronze", "quarantine")
    # the queries that do not need the last snapshot, started first (the replay's accuracy is the longest)
    accuracy = soon(trust.replay_vs_recorded, ownership, layouts, decisions_df, configs, cluster, reports,
                    read("bronze", "lb_events"))
    simulation = soon(simulation_context, read)
    heat_soon = rows_soon(usage.select("broker", "snapshot_ts", "max_usage", "num_bundles") if usage is not None else None)
    summary_soon = rows_soon(read("gold", "broker_load_summary"))
    decisions_soon = rows_soon(decisions_df)
    checks_soon = rows_soon(of_cluster(results, cluster).orderBy("suite", "expectation") if results is not None else None)
    trend = rows_soon(quality_trend(lake.read(spark, "gold", "validation_results"), day, cluster)
                      if results is not None else None)
    unservable = rows_soon(topic_bundle.where("lookup_fails").groupBy("namespace", "topic").agg(
        F.count("*").alias("snapshots")).orderBy("topic").limit(50) if topic_bundle is not None else None)
    # rows of no cluster (a folder no cluster's name could be read from) are the landing folder's, said apart
    quarantined = rows_soon(quarantine.groupBy("bronze_table", F.col("cluster").isNull().alias("landing")).agg(
        F.count("*").alias("rows"), F.first("reason").alias("example")).orderBy("landing", "bronze_table")
        if quarantine is not None else None)
    notes = soon(trust.usage_notes, usage)
    coverage = soon(trust.coverage_notes, snapshots, reports)
    inputs = soon(trust.inputs_note, snapshots, read("bronze", "bundle_data"), read("silver", "bundle_time_averages"))
    capacity = soon(capacity_context, read("gold", "capacity_forecast"))
    findings = soon(findings_context, read("gold", "pathologies"))

    def every_night(table):
        return lake.read(spark, "gold", table) if lake.exists(spark, "gold", table) else None

    nights = rows_soon(gold_night_metrics(day, config, every_night))
    partial = soon(partial_nights, every_night("night_runs"), day)
    versions = {f"{layer}/{table}": lake.version(spark, layer, table)
                for layer, table in TABLES if lake.exists(spark, layer, table)}

    # the one query the others wait for: the night's last snapshot
    snap_rows = _rows(snapshots.select("cluster", "snapshot_ts", "brokers", "leader", "missing_parts", "tool")
                      .orderBy("snapshot_ts")) if snapshots else []
    latest = snap_rows[-1]["snapshot_ts"] if snap_rows else None
    # namespace files the last snapshot misses: their anti-affinity groups cannot be audited
    aa_blind = sorted(p[len("namespaces/"):].removesuffix(".json") for p in (snap_rows[-1]["missing_parts"] or [])
                      if p.startswith("namespaces/")) if snap_rows else []

    def at_latest(df):  # a table's rows at the night's last snapshot (None without the table or a snapshot)
        return df.where(F.col("snapshot_ts") == F.lit(latest)) if df is not None and latest is not None else None

    usage_now, stats_now, namespaces_now = at_latest(usage), at_latest(stats_df), at_latest(namespaces)
    rates_soon = rows_soon(usage_now.select("broker", (F.col("msg_rate_in") + F.col("msg_rate_out")).alias("rate"),
                                            "max_usage") if usage_now is not None else None)
    triggers_df, recs_df = read("gold", "split_triggers"), read("gold", "split_recommendations")
    audit = read("gold", "anti_affinity_audit")
    triggers, recs = rows_soon(at_latest(triggers_df)), rows_soon(at_latest(recs_df))
    cap = config.get_int("loadBalancerNamespaceMaximumBundles")
    near_cap = rows_soon(namespaces_now.where(F.col("num_bundles") >= 0.8 * cap).select("namespace", "num_bundles")
                         if namespaces_now is not None else None)
    near_soon = rows_soon(_near_limits(stats_now, config) if stats_now is not None else None)
    # uneven spreads as the night ends; placements Pulsar would not make, all night (a few rows)
    violations = rows_soon(at_latest(audit.where(F.col("scope") != "placement")) if audit is not None else None)
    misplaced = rows_soon(audit.where(F.col("scope") == "placement").orderBy("snapshot_ts", "message").limit(20)
                          if audit is not None else None)
    aa_groups = soon(trust.anti_affinity_groups, layouts, latest)

    heat = heat_soon.result()
    times = sorted({r["snapshot_ts"] for r in heat})
    heat_values = {(r["broker"], r["snapshot_ts"].strftime("%H:%M")): r["max_usage"] for r in heat}
    heat_rows = order_heat(heat_values, [t.strftime("%H:%M") for t in times],
                           config.get_float("loadBalancerBrokerOverloadedThresholdPercentage") / 100,
                           config.get_float("loadBalancerBrokerThresholdShedderPercentage") / 100)
    broker_rows = sorted(summary_soon.result(), key=lambda r: (-(r["peak_max_usage"] or 0), natural_key(r["broker"])))

    decisions = decisions_soon.result()
    latest_decisions = [d for d in decisions if d["snapshot_ts"] == latest]
    rates_rows = rates_soon.result()
    rates_now = {r["broker"]: r["rate"] for r in rates_rows}
    usage_at_latest = {r["broker"]: r["max_usage"] for r in rates_rows if r["max_usage"] is not None}
    bundle_rates, bundle_topics = {}, {}
    if usage is not None and stats_now is not None and latest_decisions:
        moved = list({d["bundle"] for d in latest_decisions})
        moved_rows = _rows(stats_now.where(F.col("bundle").isin(moved)).select(
            "bundle", (F.col("msg_rate_in") + F.col("msg_rate_out")).alias("rate"), "topics", "hottest_topic_share"))
        bundle_rates = {r["bundle"]: r["rate"] for r in moved_rows}
        # a bundle one topic carries counts as that topic alone: no move or split spreads it (gold/pathologies)
        bundle_topics = {r["bundle"]: 1 if (r["hottest_topic_share"] or 0) >= ONE_TOPIC_SHARE else r["topics"]
                         for r in moved_rows}
    sim = simulation.result()
    if sim is not None:  # from the snapshot rows already collected, not a query of its own
        sim["generated"] = generated([r["tool"] for r in snap_rows])
    decision = decided(sim, strategy)
    act_as = decision["act_as"]
    strategies = []
    for name in trust.REPLAYED:
        now = [d for d in latest_decisions if d["strategy"] == name]
        after = rates_after([{**d, "source": d["broker"]} for d in now], rates_now, bundle_rates)
        strategies.append({
            "name": name, "configured": name == strategy,
            "day_unloads": sum(1 for d in decisions if d["strategy"] == name),
            "now_unloads": len(now), "sources": sorted({d["broker"] for d in now}),
            "destinations": sorted({d["destination"] or "(placement at lookup)" for d in now}),
            "spread_before": spread(rates_now), "spread_after": spread(after),
        })

    triggers, recs = triggers.result(), recs.result()
    by_bundle: dict[str, dict] = {}
    for t in triggers:
        b = by_bundle.setdefault(t["bundle"], {"bundle": t["bundle"], "owner": t["broker"], "triggers": {}, "algorithms": [],
                                              "detail": t["detail"], "share": None})
        b["triggers"][t["trigger"]] = "split" if t["selected"] else f"skipped: {t['skipped']}"
    for r in recs:
        if r["bundle"] in by_bundle:
            by_bundle[r["bundle"]]["algorithms"].append(r)
            by_bundle[r["bundle"]]["share"] = r["hottest_topic_share"]
    hot = sorted(by_bundle.values(), key=lambda b: b["bundle"])
    actions = {"splits": [], "unloads": []}
    for b in hot:
        if b["triggers"].get(split_trigger) == "split":
            chosen = next((a for a in b["algorithms"] if a["algorithm"] == algorithm and a["splits"]), None)
            if chosen and not (b["share"] or 0) >= 0.8:
                actions["splits"].append({"bundle": b["bundle"], "why": b["detail"], "command": chosen["command"]})
    for d in latest_decisions:
        if d["strategy"] == act_as:
            actions["unloads"].append({"bundle": d["bundle"], "source": d["broker"], "destination": d["destination"],
                                       "why": f"{d['reason']}: {d['metric']} {d['value']:.3g} vs {d['threshold']:.3g}",
                                       "command": d["command"]})
    actions["strategy"] = act_as
    actions["check"] = check_wave([{"bundle": a["bundle"], "source": a["source"], "destination": a["destination"]}
                                   for a in actions["unloads"]], rates_now, usage_at_latest, bundle_topics,
                                  bundle_rates, config.get_float("loadBalancerNamespaceBundleMaxMsgRate")
                                  if split_trigger == "modular" else None) if actions["unloads"] else None

    near = sorted(near_soon.result(), key=lambda r: -r["worst"])[:20]  # at 80-100 % of a split limit: the next flagged
    checks = checks_soon.result()
    night_rows = nights.result()
    return {
        "cluster": cluster, "day": day, "latest": latest.strftime("%Y-%m-%d %H:%M UTC") if latest else "no snapshots",
        "snapshot_count": len(snap_rows), "broker_count": len(snap_rows[-1]["brokers"]) if snap_rows else 0,
        "strategy": strategy, "replayed": strategy in trust.REPLAYED, "legacy": legacy_reason(config),
        "algorithm": algorithm, "split_trigger": split_trigger, "grace_minutes": grace, "profile": config.profile,
        "config_changes": trust.config_changes(configs, cluster), "config_notes": configs.notes(cluster),
        "config_taken_otherwise": limit_notes(config),
        "strategy_changed": len({configured_strategy(c) for _, c in configs.changes(cluster)}) > 1,
        "actions": actions, "heat": {"rows": heat_rows, "times": [t.strftime("%H:%M") for t in times],
                                     "values": heat_values,
                                     "idle": {(r["broker"], r["snapshot_ts"].strftime("%H:%M")) for r in heat
                                              if r["num_bundles"] == 0}},
        "brokers": broker_rows, "strategies": strategies, "hot": hot, "near": near, "near_cap": near_cap.result(),
        "cap": cap, "violations": violations.result(),
        "misplaced": misplaced.result(), "aa_groups": aa_groups.result(), "aa_blind": aa_blind, "usage_notes": notes.result(),
        "inputs_note": inputs.result(), "coverage_notes": coverage.result(), "replay_accuracy": accuracy.result(),
        "checks": checks, "failed_checks": [scoped(c, cluster) for c in checks if not c["success"]],
        "quality_trend": [{**t, "partial": t["snapshot_date"] in partial.result()} for t in trend.result()], "unservable": unservable.result(), "quarantined": quarantined.result(),
        "docs_vs_code": DOCS_VS_CODE, "simulation": sim, "capacity": capacity.result(), "decision": decision,
        "findings": findings.result(),
        "nights": nights_context(night_rows, cluster, day, partial.result()), "partial_nights": partial.result(), "findings_trend": findings_trend(night_rows, cluster, day),
        "provenance": {"run_id": run_id, "partition": day, "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                       "versions": versions},
    }


def _near_limits(stats, config: PulsarConfig):
    """Bundles at 80-100 % of a split limit (the next to be flagged), with the worst of their four ratios."""
    limits = {"topics": config.get_float("loadBalancerNamespaceBundleMaxTopics"),
              "sessions": config.get_float("loadBalancerNamespaceBundleMaxSessions"),
              "msg_rate": config.get_float("loadBalancerNamespaceBundleMaxMsgRate"),
              "throughput": config.get_float("loadBalancerNamespaceBundleMaxBandwidthMbytes") * 1048576}
    # a limit of 0 or less bounds nothing here (a hostile config holds one; dividing by 0 fails under ANSI SQL)
    limits = {name: F.lit(v if v > 0 else float("inf")) for name, v in limits.items()}
    ratios = stats.select(
        "bundle", "owner_broker",
        (F.col("topics") / limits["topics"]).alias("topics"),
        (F.col("sessions") / limits["sessions"]).alias("sessions"),
        ((F.col("msg_rate_in") + F.col("msg_rate_out")) / limits["msg_rate"]).alias("msg_rate"),
        ((F.col("msg_throughput_in") + F.col("msg_throughput_out")) / limits["throughput"]).alias("throughput"))
    worst = F.greatest("topics", "sessions", "msg_rate", "throughput")
    return ratios.where((worst >= 0.8) & (worst <= 1.0)).withColumn("worst", worst)


def _done(value):
    from concurrent.futures import Future

    future = Future()
    future.set_result(value)
    return future
