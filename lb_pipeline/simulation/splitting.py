"""Which bundles a simulated cluster splits each cycle, and where: Pulsar's split trigger and split algorithm.

* modular load manager: the leader's ``BundleSplitterTask`` (``triggers.modular_split_candidates``: topics and
  sessions from the brokers' last stats, rate and bandwidth from the long-term ``BundleData``), then for each chosen
  bundle ``canSplitBundle`` and the admin split with ``defaultNamespaceBundleSplitAlgorithm``
  (``ModularLoadManagerImpl.checkNamespaceBundleSplit``); the children are unloaded when
  ``loadBalancerAutoUnloadSplitBundlesEnabled`` (they are then placed by the placement path, their clients reconnect);
* extensible load manager (TransferShedder): each owner's ``DefaultNamespaceBundleSplitStrategyImpl`` with its hit
  counts (``triggers.ExtensibleSplitStrategy``); the children stay on the owner.

The trigger reads every bundle each cycle; only bundles past a threshold (and, for the extensible strategy, those
with a hit count running) can be chosen, so the rest are filtered out with arrays first. Each broker's bundles are
walked in a fresh ``ConcurrentHashMap``'s order of its whole map (its history is not known); the modular trigger
walks the leader's brokers in its map's order, the extensible owners go in name order (each runs its own
scheduler; the order matters only when a namespace reaches its bundle cap).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lb_pipeline.algorithms.splits import SplitRefused, SplitResult, automatic_algorithm, split_boundary
from lb_pipeline.algorithms.splits.triggers import ExtensibleSplitStrategy, SplitLimits, modular_split_candidates
from lb_pipeline.model.bundles import Bundle
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.javahash import concurrent_hash_map_order
from lb_pipeline.simulation.bundle_set import BundleSet, bundle_range


@dataclass(frozen=True)
class SplitChoice:
    bundle: int  # index in the bundle set
    broker: str
    boundaries: tuple[int, ...]
    reason: str  # the threshold that triggered it, and the algorithm


class Splits:
    """The split trigger of one simulated run, with its state (the extensible owners' hit counts)."""

    def __init__(self, config: PulsarConfig, extensible: bool):
        self.config, self.extensible = config, extensible
        self.enabled = config.get_bool("loadBalancerAutoBundleSplitEnabled")
        self.algorithm = automatic_algorithm(config)
        self.limits = SplitLimits.from_config(config)
        self.unload_children = not extensible and config.get_bool("loadBalancerAutoUnloadSplitBundlesEnabled")
        self.owners: dict[str, ExtensibleSplitStrategy] = {}
        self.refused: dict[str, str] = {}  # bundle → why the algorithm gave no boundary (for the notes)

    def hot(self, bs: BundleSet, i: int, traffic: np.ndarray, long_term: np.ndarray) -> np.ndarray:
        """Present bundles past a split threshold: rate and bandwidth long-term (modular) or instantaneous."""
        topics, clients = bs.topics(i), bs.clients(i)
        x = traffic if self.extensible else long_term
        past = self.limits.past(topics, clients[:, 0] + clients[:, 1], x[:, 0] + x[:, 1], x[:, 2] + x[:, 3])
        return bs.present(i) & (topics >= 2) & past

    def candidates(self, bs: BundleSet, i: int, traffic: np.ndarray, long_term: np.ndarray) -> np.ndarray | None:
        """The bundles the trigger has to look at this cycle: past a threshold, or (extensible) with a hit count
        running; None when there is nothing to look at."""
        if not self.enabled:
            return None
        mask = self.hot(bs, i, traffic, long_term)
        if self.extensible:
            running = [bs.index[b] for s in self.owners.values() for b in s.hit_count if b in bs.index]
            mask[running] = True
            mask &= bs.present(i)
        return mask if mask.any() else None

    def choose(self, bs: BundleSet, i: int, load, owner: np.ndarray, brokers: list[str],
               mask: np.ndarray) -> list[SplitChoice]:
        """``load``: the leader's ``LoadData`` with the current owners; ``mask``: from ``candidates``."""
        if self.extensible:
            return self._extensible(bs, i, load, owner, brokers, mask)
        if len(load.brokers) <= 1:  # the modular leader's checkNamespaceBundleSplit needs more than one known broker
            return []
        return self._modular(bs, i, load, owner, brokers, mask)

    @staticmethod
    def _lookup(load, owner, brokers, mask, names) -> dict[str, dict]:
        """broker → its bundles in ``mask`` → ``NamespaceBundleStats`` from its report's lastStats, in the order of
        the broker's whole map (a fresh ``ConcurrentHashMap`` of all its bundles: the size sets the order), which
        the triggers walk."""
        out: dict[str, dict] = {}
        for n in np.flatnonzero(mask).tolist():
            b = brokers[owner[n]] if owner[n] >= 0 else None
            if b in load.brokers:
                out.setdefault(b, {})[names[n]] = load.brokers[b]["lastStats"][names[n]]
        return {b: {k: s[k] for k in concurrent_hash_map_order(load.brokers[b]["lastStats"]) if k in s}
                for b, s in sorted(out.items())}

    def _boundary(self, bs: BundleSet, n: int, i: int):
        ns, lo, hi = bundle_range(bs.names[n])
        try:
            return split_boundary(self.algorithm, Bundle(ns, lo, hi), bs.topic_loads(n, i), self.config)
        except SplitRefused as refused:  # specified_positions_divide gets no positions here: Pulsar's split fails
            return SplitResult(self.algorithm, Bundle(ns, lo, hi), None, str(refused))

    def _modular(self, bs, i, load, owner, brokers, hot) -> list[SplitChoice]:
        counts = bs.namespace_counts(i)
        reports = {b: {"lastStats": s} for b, s in self._lookup(load, owner, brokers, hot, bs.names).items()}
        out = []
        for d in modular_split_candidates(reports, load.bundle_data, counts, self.config):
            if not d.selected:
                continue
            n = bs.index[d.bundle]
            result = self._boundary(bs, n, i)  # canSplitBundle, then the admin split's getSplitBoundary
            if not result.splits:
                self.refused[d.bundle] = f"{result.algorithm}: {result.failure or result.reason}"
                continue
            out.append(SplitChoice(n, d.broker, tuple(result.boundaries), f"{d.reason}, {result.algorithm}"))
        return out

    def _extensible(self, bs, i, load, owner, brokers, mask) -> list[SplitChoice]:
        counts, out = bs.namespace_counts(i), []
        stats = self._lookup(load, owner, brokers, mask, bs.names)
        for b in sorted(set(stats) | set(self.owners)):
            strategy = self.owners.setdefault(b, ExtensibleSplitStrategy(self.config))
            mine = stats.get(b, {})
            if not mine and not strategy.hit_count:
                continue
            for d in strategy.find_bundles_to_split(b, mine, counts, lambda bundle: self._boundary(
                    bs, bs.index[bundle.name], i)):
                if d.selected:
                    out.append(SplitChoice(bs.index[d.bundle], b, tuple(d.boundary.boundaries),
                                           f"{d.reason}, {d.boundary.algorithm}"))
                elif d.boundary is not None and not d.boundary.splits:
                    self.refused[d.bundle] = f"{d.boundary.algorithm}: {d.boundary.failure or d.boundary.reason}"
        return out
