"""Shared by the gold stages: keys, the partition's effective Pulsar config, common asset options."""

import dagster as dg

from assets.partitions import daily
from lb_pipeline.transforms.config import effective_config


def key(layer: str, name: str) -> dg.AssetKey:
    return dg.AssetKey([layer, name])


def day_config(session, lake, day: str):
    return effective_config(lake.read(session, "bronze", "config", day), lake.read(session, "bronze", "snapshots", day))


def options(group: str) -> dict:
    return dict(group_name=group, partitions_def=daily, kinds={"spark", "delta"},
                retry_policy=dg.RetryPolicy(max_retries=2, delay=10))
