"""The simulation's bundles: the recorded ones, and the children of the splits the simulation makes itself.

The history records each bundle's traffic as one set of numbers. A bundle the simulation splits is cut by hash range,
so each child carries the share of its *root* (the recorded bundle it descends from) that the root's topics hashed
into the child's range carry, from the topic-level stats of the snapshot (``broker-stats topics``): message rates,
throughputs, producers, consumers and the topic count, each by its own share. Without topic-level stats of the root
at a snapshot the share is the child's part of the hash range (topics spread evenly) and the run's notes say so.

A child whose name the recording also holds (Pulsar made the same split later) borrows that bundle's slot: once
the recording shows the bundle itself, its own traffic takes over and the simulated owner carries on. When the
recording replaces a root that the simulation had split differently, the root's children vanish with it and the
recorded bundles take the owners of the children whose range holds them (``ownership.inherit_owners``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from lb_pipeline.algorithms.splits.common import TopicLoad
from lb_pipeline.model.bundles import FULL_UPPER_BOUND, format_range, parse_range
from lb_pipeline.simulation.leader_view import BundleOrders

# the columns a child takes a share of: 4 traffic (history.TRAFFIC), producers, consumers, topics
PROFILE_COLUMNS = ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out", "producer_count",
                   "consumer_count")
SHARES = len(PROFILE_COLUMNS) + 1
ONE_TOPIC_SHARE = 0.9  # pathologies.unsplittable_bundles' share: a bundle one topic carries


def bundle_range(name: str) -> tuple[str, int, int]:
    ns, rng = name.rsplit("/", 1)
    lo, hi = parse_range(rng)
    return ns, lo, hi


class TopicProfiles:
    """Per recorded bundle and snapshot: its topics' hashes (sorted) and running sums of their columns.

    ``rows``: topic-level rows (``bundle``, ``snapshot_ts``, ``topic_hash``, ``PROFILE_COLUMNS``) of the bundles
    that can reach a split threshold; other bundles never split, so their topics are not needed."""

    def __init__(self, history, rows: pd.DataFrame | None = None):
        self._by: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        if rows is None or rows.empty:
            return
        index = {b: n for n, b in enumerate(history.bundles)}
        t_ms = (pd.to_datetime(rows["snapshot_ts"], utc=True).astype("int64") // 1_000_000).to_numpy()
        s_of = {int(t): i for i, t in enumerate(history.times)}
        rows = rows.assign(_s=[s_of.get(int(t), -1) for t in t_ms], _n=rows["bundle"].map(index))
        rows = rows[(rows["_s"] >= 0) & rows["_n"].notna()]
        for (n, s), g in rows.groupby(["_n", "_s"], sort=False):
            g = g.sort_values("topic_hash", kind="stable")
            cols = np.column_stack([g[c].fillna(0).to_numpy(float) for c in PROFILE_COLUMNS] + [np.ones(len(g))])
            self._by[(int(n), int(s))] = (g["topic_hash"].to_numpy(np.int64),
                                          np.vstack([np.zeros(SHARES), np.cumsum(cols, axis=0)]))

    def has(self, root: int, i: int) -> bool:
        return (root, i) in self._by

    def roots(self, i: int) -> np.ndarray:
        """The recorded bundles whose topics are known at snapshot ``i``."""
        return np.array([n for n, s in self._by if s == i], np.int64)

    def _span(self, root: int, i: int, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, int, int]:
        hashes, sums = self._by[(root, i)]
        a = int(np.searchsorted(hashes, lo, "left"))
        b = int(np.searchsorted(hashes, hi, "right" if hi == FULL_UPPER_BOUND else "left"))  # the last bundle is closed
        return hashes, sums, a, b

    def shares(self, root: int, i: int, lo: int, hi: int, root_lo: int, root_hi: int) -> np.ndarray:
        """The part of ``root``'s columns its topics in ``[lo, hi)`` carry at snapshot ``i``."""
        range_share = (hi - lo) / (root_hi - root_lo)
        if not self.has(root, i):
            return np.full(SHARES, range_share)
        _, sums, a, b = self._span(root, i, lo, hi)
        _, _, ra, rb = self._span(root, i, root_lo, root_hi)  # topics reported outside the root's range count nowhere
        total, part = sums[rb] - sums[ra], sums[b] - sums[a]
        count_share = part[-1] / total[-1] if total[-1] > 0 else range_share
        return np.where(total > 0, part / np.where(total > 0, total, 1.0), count_share)

    def topics(self, root: int, i: int, lo: int, hi: int) -> list[TopicLoad]:
        """The root's topics inside ``[lo, hi)`` as the split algorithms read them."""
        if not self.has(root, i):
            return []
        hashes, sums, a, b = self._span(root, i, lo, hi)
        rows = np.diff(sums[a:b + 1], axis=0)
        return [TopicLoad("", int(h), float(r[0] + r[1]), float(r[2] + r[3])) for h, r in zip(hashes[a:b].tolist(), rows)]


class BundleSet:
    """The bundles of one simulated run: their names, which recorded bundle each one's traffic comes from (its
    root) and in what share, and which the simulation has split away."""

    def __init__(self, history, profiles: TopicProfiles | None = None):
        h = self.h = history
        self.profiles = profiles or TopicProfiles(h)
        self.names = list(h.bundles)
        self.index = {b: n for n, b in enumerate(self.names)}
        self.recorded = len(self.names)
        self.root = np.arange(self.recorded)
        self.share = np.ones((self.recorded, SHARES))
        self.away = np.zeros(self.recorded, bool)  # split by the simulation: its children stand in for it
        self.approximated: set[str] = set()  # roots cut without topic-level stats
        self.orders = BundleOrders(self.names, self.index)
        self.split_any = False
        self._cache: dict[str, tuple] = {}

    @property
    def size(self) -> int:
        return len(self.names)

    def _memo(self, what: str, i: int, make):
        key = (i, self.orders.version)
        if what not in self._cache or self._cache[what][0] != key:
            self._cache[what] = (key, make())
        return self._cache[what][1]

    def present(self, i: int) -> np.ndarray:
        return self._memo("present", i, lambda: self.h.present[i][self.root] & ~self.away)

    def traffic(self, recorded: np.ndarray) -> np.ndarray:
        """(bundles, 4) from the recorded bundles' traffic (``History.traffic_at``)."""
        return recorded if not self.split_any else recorded[self.root] * self.share[:, :4]

    def clients(self, i: int) -> np.ndarray:
        return self._memo("clients", i, lambda: np.rint(self.h.clients[i][self.root] * self.share[:, 4:6]))

    def topics(self, i: int) -> np.ndarray:
        return self._memo("topics", i, lambda: np.rint(self.h.topics[i][self.root] * self.share[:, 6]).astype(np.int64))

    def one_topic(self, i: int, share: float = ONE_TOPIC_SHARE) -> np.ndarray:
        """Per bundle: one topic carries it (a single topic, or one topic with at least ``share`` of its message rate
        where its topics are known): no split can divide it, and wherever it goes its load goes whole."""
        def make() -> np.ndarray:
            out = self.topics(i) == 1
            known = np.isin(self.root, self.profiles.roots(i))
            for n in np.flatnonzero(self.present(i) & ~out & known).tolist():
                loads = self.topic_loads(n, i)
                total = sum(t.msg_rate for t in loads)
                out[n] = total > 0 and max(t.msg_rate for t in loads) >= share * total
            return out
        return self._memo("one_topic", i, make)

    def namespace_counts(self, i: int) -> dict[str, int]:
        """namespace → its bundles now (``NamespaceService.getBundleCount``)."""
        def count() -> dict[str, int]:
            out: dict[str, int] = {}
            for ns in self.orders.namespaces[self.present(i)].tolist():
                out[ns] = out.get(ns, 0) + 1
            return out
        return self._memo("namespaces", i, count)

    def enter_snapshot(self, i: int) -> None:
        """A new snapshot: borrowed slots the recording now shows go back to their own traffic; children whose
        root the recording no longer shows are gone; every child's shares come from this snapshot's topics."""
        h = self.h
        alive = h.present[i][self.root]
        derived = np.ones(self.size, bool)
        derived[:self.recorded] = self.root[:self.recorded] != np.arange(self.recorded)
        for n in np.flatnonzero(derived).tolist():
            if n < self.recorded and (h.present[i][n] or not alive[n]):
                self.root[n], self.share[n], self.away[n] = n, 1.0, False  # its own recording again
            elif not alive[n]:
                self.away[n] = True  # a child whose root the recording replaced: gone with it
            elif not self.away[n]:
                self.share[n] = self._shares(int(self.root[n]), i, self.names[n])
        own = np.zeros(self.size, bool)
        own[:self.recorded] = self.root[:self.recorded] == np.arange(self.recorded)
        self.away[own & ~h.present[i][self.root]] = False  # the recording dropped it: no longer split away
        self.orders.version += 1

    def _shares(self, root: int, i: int, name: str) -> np.ndarray:
        _, lo, hi = bundle_range(name)
        _, rlo, rhi = bundle_range(self.h.bundles[root])
        if not self.profiles.has(root, i):
            self.approximated.add(self.h.bundles[root])
        return self.profiles.shares(root, i, lo, hi, rlo, rhi)

    def topic_loads(self, n: int, i: int) -> list[TopicLoad]:
        _, lo, hi = bundle_range(self.names[n])
        return self.profiles.topics(int(self.root[n]), i, lo, hi)

    def split(self, n: int, boundaries: tuple[int, ...], i: int) -> list[int]:
        """Replace bundle ``n`` by its children at ``boundaries``; returns their indices (new ones appended)."""
        ns, lo, hi = bundle_range(self.names[n])
        cuts = [lo, *sorted(boundaries), hi]
        names = [f"{ns}/{format_range(a, b)}" for a, b in zip(cuts, cuts[1:])]
        now = self.present(i)
        if any(k is not None and now[k] for k in map(self.index.get, names)):
            return []  # a child's range is already a live bundle: the history overlaps itself, no split
        root, out = int(self.root[n]), []
        for name in names:
            k = self.index.get(name)
            k = self._append(name) if k is None else k  # a recorded name not live now, or an earlier child: reuse
            self.root[k], self.away[k] = root, False
            self.share[k] = self._shares(root, i, name)
            out.append(k)
        self.away[n] = True
        self.split_any = True
        self.orders.version += 1
        return out

    def _append(self, name: str) -> int:
        k = self.size
        self.names.append(name)
        self.index[name] = k
        self.root = np.append(self.root, 0)
        self.share = np.vstack([self.share, np.ones((1, SHARES))])
        self.away = np.append(self.away, False)
        self.orders.extend([name])
        return k
