"""Inputs and outputs shared by the split algorithms (``NamespaceBundleSplitAlgorithm``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lb_pipeline.model.bundles import Bundle, format_boundary, topic_hash

MIB = 1024 * 1024


@dataclass(frozen=True)
class TopicLoad:
    """One loaded topic of a bundle: its full name (partitions carry ``-partition-N``), hash and traffic."""

    name: str
    hash: int
    msg_rate: float = 0.0  # msgRateIn + msgRateOut, msg/s
    throughput: float = 0.0  # msgThroughputIn + msgThroughputOut, bytes/s

    @classmethod
    def from_stats(cls, name: str, stats: Mapping[str, float]) -> "TopicLoad":
        """From one topic object of ``broker-stats topics`` / ``topics stats``."""
        return cls(
            name=name, hash=topic_hash(name),
            msg_rate=float(stats.get("msgRateIn", 0.0)) + float(stats.get("msgRateOut", 0.0)),
            throughput=float(stats.get("msgThroughputIn", 0.0)) + float(stats.get("msgThroughputOut", 0.0)),
        )


def topics_from_broker_stats(doc: Mapping, namespace: str, bundle_range: str) -> list[TopicLoad]:
    """The topics of one bundle from a ``broker-stats topics`` document (namespace → range → domain → topic)."""
    domains = doc.get(namespace, {}).get(bundle_range, {})
    return [TopicLoad.from_stats(name, stats) for topics in domains.values() for name, stats in topics.items()]


@dataclass(frozen=True)
class SplitResult:
    """What ``getSplitBoundary`` returns: boundaries, or none (``reason`` says why Pulsar would not split)."""

    algorithm: str
    bundle: Bundle
    boundaries: tuple[int, ...] | None
    reason: str

    @property
    def splits(self) -> bool:
        """Pulsar would split: boundaries were returned and ``NamespaceBundleFactory`` accepts them."""
        return bool(self.boundaries) and self.failure is None

    @property
    def failure(self) -> str | None:
        """Why Pulsar's split would fail with IllegalArgument after the algorithm returned these boundaries
        (flow_or_qps can return duplicate cuts for topics with equal hashes; no de-duplication happens)."""
        if not self.boundaries:
            return None
        cuts = sorted(self.boundaries)
        if cuts[0] <= self.bundle.lower or cuts[-1] >= self.bundle.upper:
            return "a boundary is not strictly inside the bundle"
        if len(set(cuts)) != len(cuts):
            return "duplicate boundaries would create an empty bundle"
        return None

    @property
    def children(self) -> list[Bundle]:
        if not self.splits:
            return []
        cuts = [self.bundle.lower, *sorted(self.boundaries), self.bundle.upper]
        return [Bundle(self.bundle.namespace, a, b) for a, b in zip(cuts, cuts[1:])]

    def boundaries_hex(self) -> list[str]:
        return [format_boundary(b) for b in self.boundaries or ()]


def hashes(topics: Iterable[TopicLoad | int]) -> list[int]:
    return [t if isinstance(t, int) else t.hash for t in topics]
