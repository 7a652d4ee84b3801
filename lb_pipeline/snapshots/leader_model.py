"""The generated cluster's leader: the per-bundle ``TimeAverageMessageData`` it keeps (``TimeAverages``, as Pulsar's
``ModularLoadManagerImpl`` updates it between snapshots), and the resource quotas an admin set
(``pulsar-admin resource-quotas set``), written to each snapshot's ``lb/resource-quota`` as the metadata store holds
them, which it starts a bundle's averages from where it starts them afresh (``getBundleDataOrDefault``)."""

from __future__ import annotations

import numpy as np

from lb_pipeline.snapshots.synthetic_cluster import (
    DEFAULT_BUNDLE_RATE, DEFAULT_BUNDLE_THROUGHPUT, LONG_SAMPLES, SHORT_SAMPLES, Cluster,
)


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


class TimeAverages:
    """The leader's in-memory ``TimeAverageMessageData`` for every bundle (short 10, long 1000 samples)."""

    def __init__(self, n_bundles: int, quota: np.ndarray | None = None):
        self.n = {w: np.zeros(n_bundles) for w in (SHORT_SAMPLES, LONG_SAMPLES)}
        self.v = {w: np.tile([DEFAULT_BUNDLE_RATE, DEFAULT_BUNDLE_RATE, DEFAULT_BUNDLE_THROUGHPUT,
                              DEFAULT_BUNDLE_THROUGHPUT], (n_bundles, 1)) for w in (SHORT_SAMPLES, LONG_SAMPLES)}
        self.quota = quota  # (bundles, 4) a ResourceQuota's rates and bandwidths, NaN where a bundle has none

    def follow_owners(self, owner: np.ndarray) -> None:
        """A bundle whose owner changed since the last call starts afresh, as the leader drops the data of a bundle
        no report lists while it moves (``ModularLoadManagerImpl.updateBundleData``): from its resource quota with a
        full window where it has one, else from the default seed (``getBundleDataOrDefault``)."""
        before = getattr(self, "_owner", None)
        if before is not None:
            n = min(len(before), len(owner), len(self.n[SHORT_SAMPLES]))
            moved = np.zeros(len(self.n[SHORT_SAMPLES]), dtype=bool)
            moved[:n] = (before[:n] != owner[:n]) & (before[:n] >= 0)
            quoted = np.zeros_like(moved)
            if self.quota is not None:
                k = min(len(self.quota), len(moved))
                quoted[:k] = moved[:k] & ~np.isnan(self.quota[:k, 0])
            for w in (SHORT_SAMPLES, LONG_SAMPLES):
                self.n[w][moved] = 0
                self.v[w][moved] = [DEFAULT_BUNDLE_RATE, DEFAULT_BUNDLE_RATE, DEFAULT_BUNDLE_THROUGHPUT,
                                    DEFAULT_BUNDLE_THROUGHPUT]
                if quoted.any():
                    self.n[w][quoted] = w
                    self.v[w][quoted] = self.quota[quoted[:len(self.quota)]]
        self._owner = owner.copy()

    def sample(self, mask: np.ndarray, x: np.ndarray, events: int) -> None:
        """Apply ``n = min(n+1, max); avg = ((n-1)*avg + x)/n`` ``events`` times to the bundles in ``mask``."""
        for w in (SHORT_SAMPLES, LONG_SAMPLES):
            n, v = self.n[w], self.v[w]
            for _ in range(events):
                n[mask] = np.minimum(n[mask] + 1, w)
                v[mask] = ((n[mask, None] - 1) * v[mask] + x[mask]) / n[mask, None]

    def as_json(self, i: int, w: int) -> dict:
        rin, rout, tin, tout = self.v[w][i]
        return {"maxSamples": w, "numSamples": int(self.n[w][i]), "msgThroughputIn": float(tin),
                "msgThroughputOut": float(tout), "msgRateIn": float(rin), "msgRateOut": float(rout)}
