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
    """Per snapshot, in order: the groups spread unevenly (scope ``broker``/``domain``: Pulsar's own placement
    leaves such spreads), and the group bundles that arrived since the snapshot before on a broker Pulsar's
    anti-affinity filter would not have picked (scope ``placement``: a violation)."""
    out, before = [], None
    for (cluster, ts, day), snap in pdf.groupby(["cluster", "snapshot_ts", "snapshot_date"], sort=True):
        ownership = {r["bundle"]: r["broker"] for r in json.loads(snap["ownership"].iloc[0] or "[]")}
        groups = json.loads(snap["groups"].iloc[0] or "{}")
        domains = json.loads(snap["domains"].iloc[0] or "{}")
        brokers = json.loads(snap["brokers"].iloc[0] or "[]")
        row = {"cluster": cluster, "snapshot_ts": ts, "snapshot_date": day}
        for f in aa.audit(ownership, groups, brokers, domains or None):
            out.append({**row, "group_name": f.group, "scope": f.scope, "place": f.place,
                        "namespaces": list(f.namespaces), "namespace_count": f.count, "least_count": f.least,
                        "message": f.message})
        for m in aa.placements_pulsar_would_not_make(before or {}, ownership, groups, brokers, domains or None):
            kept = ", ".join(m.kept[:3]) + (f" and {len(m.kept) - 3} more" if len(m.kept) > 3 else "")
            out.append({**row, "group_name": m.group, "scope": "placement", "place": m.broker,
                        "namespaces": [m.bundle.rsplit("/", 1)[0]], "namespace_count": m.count, "least_count": m.least,
                        "message": f"bundle {m.bundle} of group {m.group} moved from {m.source} to {m.broker}, which "
                                   f"held {m.count} of the group's namespaces while another broker held {m.least}: "
                                   f"Pulsar's anti-affinity filter keeps {kept}"})
        before = ownership
    return pd.DataFrame(out, columns=[c.split(" ")[0] for c in AUDIT_SCHEMA.split(", ")])


def anti_affinity_audit(ownership: DataFrame, namespaces: DataFrame, failure_domains: DataFrame,
                        snapshots: DataFrame) -> DataFrame:
    """Every anti-affinity group unevenly spread across brokers or failure domains, per snapshot, and every group
    bundle that moved onto a broker Pulsar's placement would not have picked (``_audit``)."""
    dom = as_map(failure_domains, "broker", "domain", "domains")
    live = snapshots.select(*KEYS, F.to_json("brokers").alias("brokers"))
    joined = ownership_and_groups(ownership, namespaces).join(dom, KEYS, "left").join(live, KEYS, "inner")
    return joined.groupBy("cluster").applyInPandas(_audit, AUDIT_SCHEMA)
