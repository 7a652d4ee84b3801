"""Each cluster's effective Pulsar configuration.

One landing may hold several clusters (one collector per cluster, one landing folder), configured differently: other
thresholds, another shedding strategy, another Pulsar release. Each cluster's rows are replayed, simulated and judged
with its own configuration, as its own leader would; a cluster with no snapshot of the night gets ``default``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from lb_pipeline.model.config import PulsarConfig


class ClusterConfigs(Mapping[str, PulsarConfig]):
    """Cluster name → its effective configuration, and the one of any other cluster (``default``)."""

    def __init__(self, by_cluster: Mapping[str, PulsarConfig], default: PulsarConfig):
        self._by = dict(by_cluster)
        self.default = default

    @classmethod
    def of_any(cls, config: PulsarConfig | ClusterConfigs) -> ClusterConfigs:
        """``config`` as per-cluster configurations: one configuration serves every cluster."""
        return config if isinstance(config, ClusterConfigs) else cls({}, config)

    def of(self, cluster: str | None) -> PulsarConfig:
        return self._by.get(cluster, self.default) if cluster is not None else self.default

    def distinct(self) -> list[PulsarConfig]:
        """Every configuration a row may get (the default first), each once."""
        out = [self.default]
        for config in self._by.values():
            if all(config is not c for c in out):
                out.append(config)
        return out

    def __getitem__(self, cluster: str) -> PulsarConfig:
        return self._by[cluster]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._by))

    def __len__(self) -> int:
        return len(self._by)
