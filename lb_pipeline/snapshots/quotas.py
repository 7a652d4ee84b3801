"""The resource quotas an admin set on the generated cluster (``pulsar-admin resource-quotas set``), written to each
snapshot's ``lb/resource-quota`` as the metadata store holds them, and the leader's use of them: where it starts a
bundle's averages afresh without stored ``BundleData``, from the quota (``getBundleDataOrDefault``)."""

from __future__ import annotations

import numpy as np

from lb_pipeline.snapshots.synthetic_cluster import Cluster


def resource_quotas(c: Cluster) -> dict[int, dict]:
    """The ``ResourceQuota`` an admin set (``resource-quotas set``) for the bundles of the cluster's last namespace
    that no anti-affinity group holds (none where every namespace is in one): each bundle's traffic at the daily
    mean, as an operator sizing it would, the same in every snapshot, by bundle index. It seeds the leader's averages
    of such a bundle where the leader starts them afresh (``getBundleDataOrDefault``: ``TimeAverages``). Draws nothing
    from the history's random stream."""
    ns = c.namespaces[-1] if c.namespaces and c.namespaces[-1] not in c.aa_group else None
    out = {}
    for i in (k for k, name in enumerate(c.bundle_ns) if name == ns):
        topics = np.flatnonzero(c.topic_bundle == i)
        rate, size, fanout = c.base_rate[topics], c.msg_size[topics], c.fanout[topics]
        out[i] = {
            "msgRateIn": round(float(rate.sum()), 3), "msgRateOut": round(float((rate * fanout).sum()), 3),
            "bandwidthIn": round(float((rate * size).sum()), 1),
            "bandwidthOut": round(float((rate * size * fanout).sum()), 1),
            "memory": 64.0, "dynamic": False}
    return out


def quota_array(c: Cluster) -> np.ndarray:
    """(bundles, 4) each bundle's quota as the averages the leader starts from (rates, bandwidths as throughputs), NaN
    where it has none: what ``TimeAverages`` seeds a moved bundle with."""
    out = np.full((len(c.bundle_ns), 4), np.nan)
    for i, q in resource_quotas(c).items():
        out[i] = [q["msgRateIn"], q["msgRateOut"], q["bandwidthIn"], q["bandwidthOut"]]
    return out
