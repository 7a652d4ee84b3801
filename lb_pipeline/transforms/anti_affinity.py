"""Gold: Pulsar's anti-affinity placement audited per snapshot (``lb_pipeline.algorithms.anti_affinity``, after
``LoadManagerShared.filterAntiAffinityGroupOwnedBrokers``), one ``applyInPandas`` group per cluster."""

from __future__ import annotations

import json

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.algorithms import anti_affinity as aa
from lb_pipeline.transforms.gold import KEYS, as_map, ownership_and_groups

AUDIT_SCHEMA = ("cluster string, snapshot_ts timestamp, snapshot_date string, group_name string, scope string, "
                "place string, namespaces array<string>, namespace_count int, least_count int, message string")


def _audit(pdf: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (cluster, ts, day), snap in pdf.groupby(["cluster", "snapshot_ts", "snapshot_date"], sort=True):
        ownership = {r["bundle"]: r["broker"] for r in json.loads(snap["ownership"].iloc[0] or "[]")}
        groups = json.loads(snap["groups"].iloc[0] or "{}")
        domains = json.loads(snap["domains"].iloc[0] or "{}")
        brokers = json.loads(snap["brokers"].iloc[0] or "[]")
        for f in aa.audit(ownership, groups, brokers, domains or None):
            out.append({"cluster": cluster, "snapshot_ts": ts, "snapshot_date": day, "group_name": f.group,
                        "scope": f.scope, "place": f.place, "namespaces": list(f.namespaces), "namespace_count": f.count,
                        "least_count": f.least, "message": f.message})
    return pd.DataFrame(out, columns=[c.split(" ")[0] for c in AUDIT_SCHEMA.split(", ")])


def anti_affinity_audit(ownership: DataFrame, namespaces: DataFrame, failure_domains: DataFrame,
                        snapshots: DataFrame) -> DataFrame:
    """Every anti-affinity group unevenly spread across brokers or failure domains, per snapshot."""
    dom = as_map(failure_domains, "broker", "domain", "domains")
    live = snapshots.select(*KEYS, F.to_json("brokers").alias("brokers"))
    joined = ownership_and_groups(ownership, namespaces).join(dom, KEYS, "left").join(live, KEYS, "inner")
    return joined.groupBy("cluster").applyInPandas(_audit, AUDIT_SCHEMA)
