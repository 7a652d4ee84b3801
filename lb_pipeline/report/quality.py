"""The report's "Data quality" section: the night's check results that concern one cluster, their trend over the
nights, and each failure told whose it is (gold/validation_results: small, safe to collect)."""

from __future__ import annotations

import json

from pyspark.sql import functions as F


def of_cluster(results, cluster: str):
    """The results that concern ``cluster``: every passed one, and the failures of its rows or of no one cluster's
    (``clusters`` empty: the landing's; null: not known, results written before they were told apart)."""
    if "clusters" not in results.columns:
        return results
    return results.where(F.col("success") | F.col("clusters").isNull() | (F.size("clusters") == 0)
                         | F.array_contains("clusters", cluster))


def quality_trend(results, day: str, cluster: str, nights: int = 14):
    """Expectations evaluated and failed (critical, warning) per night, for the nights up to ``day``: the failures
    of ``cluster``'s rows and those of no one cluster."""
    failed = ~F.col("success")
    return (of_cluster(results, cluster).where(F.col("snapshot_date") <= F.lit(day)).groupBy("snapshot_date").agg(
        F.count("*").alias("evaluated"),
        F.sum((failed & (F.col("severity") == "critical")).cast("int")).alias("critical"),
        F.sum((failed & (F.col("severity") != "critical")).cast("int")).alias("warnings"),
    ).orderBy(F.col("snapshot_date").desc()).limit(nights))


def scoped(check: dict, cluster: str) -> dict:
    """A failure told whose it is: ``landing`` when no one cluster's rows fail it, ``shared`` the other clusters
    whose rows fail it too (its count is of them all), and its sample rows cut to this cluster's where they say."""
    clusters = check.get("clusters")
    rows = json.loads(check["unexpected_rows"]) if check.get("unexpected_rows") else None
    if rows and clusters and all(isinstance(r, dict) and "cluster" in r for r in rows):
        rows = [r for r in rows if r["cluster"] == cluster]
    return {**check, "landing": clusters is not None and not clusters,
            "shared": sorted(c for c in clusters or [] if c != cluster),
            "unexpected_rows": json.dumps(rows, default=str) if rows else None}
