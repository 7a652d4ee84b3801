"""Shared by the stage modules: lake keys, the partition's effective Pulsar config, asset options, and the
write-then-describe step every table asset ends with."""

import os

import dagster as dg

from assets.partitions import daily
from lb_pipeline.transforms.config import cluster_configs


def key(layer: str, name: str) -> dg.AssetKey:
    return dg.AssetKey([layer, name])


_SOURCES = ("config", "snapshots", "broker_reports")  # the bronze tables a night's configurations come from
_CONFIGS: dict[tuple, object] = {}  # (lake, day, profile, versions of the _SOURCES) → configs


def day_configs(session, lake, day: str):
    """Each cluster's effective Pulsar configuration on the day, snapshot by snapshot: a landing may hold clusters
    configured differently, and each is replayed and judged under its own, as its leader ran it at each snapshot. Read
    once per version of the bronze tables it comes from: ten assets of a night ask, and each read is a few Spark jobs."""
    key = (lake.root, day, os.environ.get("LB_PULSAR_PROFILE"), *(lake.version(session, "bronze", t) for t in _SOURCES))
    if key not in _CONFIGS:
        _CONFIGS.clear()  # only the latest night is asked for again
        config, snapshots, reports = (lake.read(session, "bronze", t, day) for t in _SOURCES)
        _CONFIGS[key] = cluster_configs(config, snapshots, reports=reports)
    return _CONFIGS[key]


def day_config(session, lake, day: str, cluster: str):
    """``cluster``'s effective Pulsar configurations on the day (the profile's defaults if none of its snapshots
    landed, not another cluster's)."""
    config, snapshots, reports = (df.where(df["cluster"] == cluster) for df in (lake.read(session, "bronze", t, day)
                                                                                for t in _SOURCES))
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
        pdf = preview_df.limit(rows).toPandas()
        meta["preview"] = dg.MetadataValue.md(pdf.to_markdown(index=False))
    return meta


def write_table(session, lake, df, layer: str, table: str, day: str):
    """Replace the day's partition of ``layer/table`` with ``df``; returns (the written partition, metadata)."""
    result = lake.write_partition(df, layer, table, day)
    written = lake.read(session, layer, table, day)
    return written, table_metadata(result, written)
