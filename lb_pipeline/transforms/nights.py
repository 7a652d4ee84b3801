"""The nights the lake holds, at a glance: one row per cluster and night from the gold tables, and tonight against
the mean of the 7 and 30 nights before it (``compare``: ``gold/night_trends`` and the report's "Last nights").

Each gold table is aggregated per night in Spark (a handful of rows per night reach the driver): the cluster's
peak and mean broker usage and the brokers that crossed ``loadBalancerBrokerOverloadedThresholdPercentage``
(``gold/broker_load_summary``), the unloads the replay of the strategy the leader ran decided
(``gold/shedding_decisions``), each night judged under its own configuration, snapshot by snapshot (the threshold
and strategy of tonight's configuration only for nights written before the tables recorded theirs),
the bundles a split would help (``gold/split_recommendations``) and the findings by severity (``gold/pathologies``).
A table the lake does not hold yet contributes nothing, and a night without rows in it counts as zero there.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lb_pipeline.model.load_manager import configured_strategy
from lb_pipeline.transforms.capacity import window
from lb_pipeline.transforms.config import per_cluster
from lb_pipeline.transforms.exact import exact_avg

WINDOWS = (7, 30)  # nights the report compares tonight with
METRICS = ("peak_usage", "mean_usage", "brokers", "brokers_overloaded", "unloads", "splits", "critical_findings",
           "warning_findings")
COLUMNS = (*METRICS, "info_findings")  # info findings are listed per night, not compared
KEYS = ["cluster", "snapshot_date"]


def night_metrics(day: str, threshold: float | Column, strategy: str | Column, summary: DataFrame | None = None,
                  decisions: DataFrame | None = None, splits: DataFrame | None = None,
                  findings: DataFrame | None = None, nights: int = max(WINDOWS)) -> DataFrame | None:
    """One row per (cluster, night) of the ``nights`` nights up to ``day`` with every column of ``COLUMNS``
    (``threshold``: the overload threshold as a fraction; ``strategy``: the configured shedding strategy; either may
    be a column, a cluster's own; both for the rows that do not say what their night ran: ``snapshots_overloaded``,
    ``leader_ran``)."""
    parts = []
    if summary is not None:
        parts.append(window(summary, day, nights).groupBy(*KEYS).agg(
            F.max("peak_max_usage").alias("peak_usage"), exact_avg("mean_max_usage").alias("mean_usage"),
            F.countDistinct("broker").alias("brokers"),
            F.countDistinct(F.when(_recorded(summary, "snapshots_overloaded", F.col("snapshots_overloaded") > 0,
                                             F.col("peak_max_usage") > threshold), F.col("broker"))).alias("brokers_overloaded")))
    if decisions is not None:
        parts.append(window(decisions, day, nights).where(
            _recorded(decisions, "leader_ran", F.col("leader_ran"), F.col("strategy") == strategy))
                     .groupBy(*KEYS).agg(F.count("*").alias("unloads")))
    if splits is not None:
        parts.append(window(splits, day, nights).where("splits").groupBy(*KEYS)
                     .agg(F.countDistinct("bundle").alias("splits")))
    if findings is not None:
        parts.append(window(findings, day, nights).groupBy(*KEYS).agg(
            F.sum((F.col("severity") == "critical").cast("int")).alias("critical_findings"),
            F.sum((F.col("severity") == "warning").cast("int")).alias("warning_findings"),
            F.sum((F.col("severity") == "info").cast("int")).alias("info_findings")))
    if not parts:
        return None
    joined = reduce(lambda a, b: a.join(b, KEYS, "full_outer"), parts)
    for m in COLUMNS:
        if m not in joined.columns:
            joined = joined.withColumn(m, F.lit(None).cast("double"))
        elif m not in ("peak_usage", "mean_usage"):  # a night without rows in a table: nothing happened there
            joined = joined.withColumn(m, F.coalesce(F.col(m), F.lit(0)))
    return joined.select(*KEYS, *COLUMNS)


def _recorded(df: DataFrame, column: str, recorded: Column, otherwise: Column) -> Column:
    """``recorded`` (a test of ``column``) where the row holds ``column``, else ``otherwise``: the column is null in
    partitions written before the table had it, and missing from a table that never had it."""
    return F.coalesce(recorded, otherwise) if column in df.columns else otherwise


GOLD_TABLES = ("broker_load_summary", "shedding_decisions", "split_recommendations", "pathologies")


def gold_night_metrics(day: str, config, read_all) -> DataFrame | None:
    """``night_metrics`` of the gold tables ``read_all(table)`` returns (every night; None: not in the lake), with
    each cluster's overload threshold and shedding strategy (``config``: one configuration, or each cluster's)."""
    threshold = per_cluster(config, lambda c: c.get_float("loadBalancerBrokerOverloadedThresholdPercentage") / 100.0)
    strategy = per_cluster(config, configured_strategy)
    return night_metrics(day, threshold, strategy, *(read_all(t) for t in GOLD_TABLES))


TREND_SCHEMA = "cluster string, snapshot_date string, metric string, tonight double, " + ", ".join(
    f"mean_{w} double, nights_{w} int" for w in WINDOWS)


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def compare(rows: list[dict], cluster: str, day: str, partial: Collection[str] = ()) -> dict:
    """``rows``: ``night_metrics`` rows (collected). Tonight's value of each metric and the mean of each window of
    nights *before* ``day`` (a re-run of an old night ignores later ones; no earlier night: no mean). ``partial``:
    nights that stopped half-way (``night_runs.partial_nights``): listed as such, left out of the means."""
    mine = sorted(({**r, "partial": r["snapshot_date"] in partial} for r in rows
                   if r["cluster"] == cluster and r["snapshot_date"] <= day),
                  key=lambda r: r["snapshot_date"], reverse=True)
    tonight = next((r for r in mine if r["snapshot_date"] == day), None)
    before = [r for r in mine if r["snapshot_date"] < day and not r["partial"]]
    return {"earlier": len(before), "nights": mine, "windows": [{"nights": w, "held": len(before[:w])} for w in WINDOWS],
            "partial": sorted((r["snapshot_date"] for r in mine if r["partial"]), reverse=True),
            "metrics": [{"name": m, "tonight": tonight[m] if tonight else None,
                         "means": [_mean([r[m] for r in before[:w]]) for w in WINDOWS]} for m in METRICS]}


def trend_rows(rows: list[dict], day: str, partial: Collection[str] = ()) -> list[dict]:
    """``gold/night_trends``: per cluster with a row for ``day`` and per metric, tonight against each window of the
    complete nights before it."""
    out = []
    for cluster in sorted({r["cluster"] for r in rows if r["snapshot_date"] == day}):
        c = compare(rows, cluster, day, partial)
        for m in c["metrics"]:
            row = {"cluster": cluster, "snapshot_date": day, "metric": m["name"],
                   "tonight": None if m["tonight"] is None else float(m["tonight"])}
            for w, mean in zip(c["windows"], m["means"]):
                row[f"mean_{w['nights']}"], row[f"nights_{w['nights']}"] = mean, w["held"]
            out.append(row)
    return out
