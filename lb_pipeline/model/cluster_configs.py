"""Each cluster's effective Pulsar configuration, and how it changed over the night.

One landing may hold several clusters (one collector per cluster, one landing folder), configured differently: other
thresholds, another shedding strategy, another Pulsar release. Each cluster's rows are replayed, simulated and judged
with its own configuration, as its own leader would; a cluster with no snapshot of the night gets ``default``.

Dynamic overrides change while brokers run (``pulsar-admin brokers update-dynamic-config``) and a rolling upgrade
changes the release mid-night. Pulsar's leader reads its live ``ServiceConfiguration`` on every cycle
(``ModularLoadManagerImpl.doLoadShedding``, ``checkNamespaceBundleSplit``), so a replay of a snapshot takes the
configuration in force at that snapshot (``at``), except the two strategy classes, which its load manager reads
only when it starts (``model.at_start``: the history holds what the leader runs); what looks ahead (the simulation,
the recommendation, the capacity forecast) takes the cluster's current one, that of its last snapshot (``of``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence

from lb_pipeline.model.config import LOAD_BALANCER_KEYS, PulsarConfig

Change = tuple[int, PulsarConfig]  # from this snapshot (epoch milliseconds) on, this configuration


class ClusterConfigs(Mapping[str, PulsarConfig]):
    """Cluster name → its current configuration, the one of any other cluster (``default``), and each cluster's
    changes over the night."""

    def __init__(self, by_cluster: Mapping[str, PulsarConfig], default: PulsarConfig,
                 history: Mapping[str, Sequence[Change]] | None = None, notes: Mapping[str, list[str]] | None = None,
                 restarts: Mapping[str, list[int]] | None = None):
        self._by = dict(by_cluster)
        self._notes = {c: list(n) for c, n in (notes or {}).items() if n}
        self._restarts = {c: sorted(r) for c, r in (restarts or {}).items() if r}
        self.default = default
        self._history = {c: sorted(h, key=lambda change: change[0]) for c, h in (history or {}).items() if h}
        for cluster, changes in self._history.items():  # a cluster with a history has a current configuration
            self._by.setdefault(cluster, changes[-1][1])

    @classmethod
    def of_any(cls, config: PulsarConfig | ClusterConfigs) -> ClusterConfigs:
        """``config`` as per-cluster configurations: one configuration serves every cluster."""
        return config if isinstance(config, ClusterConfigs) else cls({}, config)

    def of(self, cluster: str | None) -> PulsarConfig:
        """The cluster's current configuration (its last snapshot's)."""
        return self._by.get(cluster, self.default) if cluster is not None else self.default

    def at(self, cluster: str | None, ms: int) -> PulsarConfig:
        """The configuration in force on ``cluster`` at ``ms`` (epoch milliseconds): its latest snapshot's at or
        before then; before its first snapshot, the first one's."""
        changes = self._history.get(cluster)
        if not changes:
            return self.of(cluster)
        return changes[max(bisect_right([t for t, _ in changes], ms) - 1, 0)][1]

    def changes(self, cluster: str | None) -> list[Change | tuple[None, PulsarConfig]]:
        """The cluster's configurations in time order, each one from the snapshot where it took effect (one entry,
        time ``None``, where nothing is known of its history)."""
        return list(self._history.get(cluster) or [(None, self.of(cluster))])

    def notes(self, cluster: str | None) -> list[str]:
        """Where the cluster's leader runs another strategy than its snapshots record (``model.at_start``)."""
        return list(self._notes.get(cluster, []))

    def leader_restarts(self, cluster: str | None) -> list[int]:
        """The times of the snapshots whose leader runs a new load manager (``model.at_start.leader_history``)."""
        return list(self._restarts.get(cluster, []))

    def distinct(self) -> list[PulsarConfig]:
        """Every configuration a row may get (the default first), each once."""
        out = [self.default]
        for config in [*self._by.values(), *(c for h in self._history.values() for _, c in h)]:
            if all(config is not c for c in out):
                out.append(config)
        return out

    def __getitem__(self, cluster: str) -> PulsarConfig:
        return self._by[cluster]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._by))

    def __len__(self) -> int:
        return len(self._by)


def changed(before: PulsarConfig, after: PulsarConfig) -> dict[str, tuple[str, str]]:
    """The load-balancer keys (and ``profile``) whose values differ: key → (before, after). The rest of a broker's
    runtime config (addresses, ports, storage) differs from broker to broker, and a new leader is no change."""
    out = {k: (before.get(k, ""), after.get(k, "")) for k in sorted(LOAD_BALANCER_KEYS)
           if before.get(k) != after.get(k)}
    if before.profile != after.profile:
        out["profile"] = (before.profile, after.profile)
    return out
