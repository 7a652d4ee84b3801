"""Shared by the stage modules: lake keys, the partition's effective Pulsar config, asset options, and the
write-then-describe step every table asset ends with."""

import os

import dagster as dg

from assets.partitions import daily
from lb_pipeline.spark.lake import first_rows
from lb_pipeline.transforms import night_runs
from lb_pipeline.transforms.config import cluster_configs


def key(layer: str, name: str) -> dg.AssetKey:
    return dg.AssetKey([layer, name])


_CONFIGS: dict[tuple, object] = {}  # (lake, day, profile, versions of the bronze tables read) → configs


def _reports(session, lake, day: str):
    """The day's ``bronze/broker_reports``, whose leader rows say when its load manager started; None on a lake
    without the table (only some bronze tables materialized): the strategies are then the recorded ones."""
    return lake.read(session, "bronze", "broker_reports", day) if lake.exists(session, "bronze", "broker_reports") else None


def day_configs(session, lake, day: str):
    """Each cluster's effective Pulsar configuration on the day, snapshot by snapshot: a landing may hold clusters
    configured differently, and each is replayed and judged under its own, as its leader ran it at each snapshot. Read
    once per version of the bronze tables it comes from: ten assets of a night ask, and each read is a few Spark jobs."""
    reports = _reports(session, lake, day)
    key = (lake.root, day, os.environ.get("LB_PULSAR_PROFILE"),
           *(lake.version(session, "bronze", t) for t in ("config", "snapshots")),
           None if reports is None else lake.version(session, "bronze", "broker_reports"))
    if key not in _CONFIGS:
        _CONFIGS.clear()  # only the latest night is asked for again
        _CONFIGS[key] = cluster_configs(*(lake.read(session, "bronze", t, day) for t in ("config", "snapshots")),
                                        reports=reports)
    return _CONFIGS[key]


def day_config(session, lake, day: str, cluster: str):
    """``cluster``'s effective Pulsar configurations on the day (the profile's defaults if none of its snapshots
    landed, not another cluster's)."""
    config, snapshots, reports = (None if df is None else df.where(df["cluster"] == cluster) for df in (
        lake.read(session, "bronze", "config", day), lake.read(session, "bronze", "snapshots", day),
        _reports(session, lake, day)))
    return cluster_configs(config, snapshots, reports=reports)


def options(group: str) -> dict:
    return dict(group_name=group, partitions_def=daily, kinds={"spark", "delta"},
                retry_policy=dg.RetryPolicy(max_retries=2, delay=10))


def table_metadata(result, preview_df=None, rows: int = 5) -> dict:
    meta = {
        "dagster/row_count": dg.MetadataValue.int(result.rows),
        "path": dg.MetadataValue.path(result.path),
        "delta_version": dg.MetadataValue.int(result.version),
    }
    if preview_df is not None and result.rows:
        pdf = first_rows(result, rows, preview_df.columns)
        pdf = preview_df.limit(rows).toPandas() if pdf is None else pdf
        meta["preview"] = dg.MetadataValue.md(pdf.to_markdown(index=False))
    return meta


def write_table(session, lake, df, layer: str, table: str, day: str):
    """Replace the day's partition of ``layer/table`` with ``df``; returns (the written partition, metadata)."""
    result = lake.write_partition(df, layer, table, day)
    written = lake.read(session, layer, table, day)
    return written, table_metadata(result, written)


def mark_night(session, lake, day: str, status: str, run_id: str) -> None:
    """``gold/night_runs``: the night running (its first step, ingest) or complete (its last, the report)."""
    lake.write_partition(session.createDataFrame(night_runs.mark(day, status, run_id), night_runs.SCHEMA),
                         "gold", "night_runs", day)

