"""The leader's ``LoadData`` of one simulated cycle, read straight from the simulation's arrays.

A sweep runs tens of thousands of cycles over ~10,000 bundles; building Pulsar's JSON for every bundle each cycle
(``LocalBrokerData.lastStats``, ``BundleData``) and then the strategies' :class:`LoadFrame` from it cost ten times the
strategies themselves. Here the frame comes from the arrays directly, in the same hash-map orders (computed once per
snapshot: the set of bundles changes only there), and the JSON is built only for what a placement reads:

* ``bundle_data``: a mapping that builds one bundle's ``BundleData`` when it is looked up;
* each report's ``lastStats``: the broker's bundles, their ``NamespaceBundleStats`` built on lookup;
* each report's ``timeAverageData``: what the leader keeps per broker (``TimeAverageBrokerData.reset``: the sums of its
  bundles' short- and long-term averages), so placements need not walk every bundle of every candidate;
* TransferShedder's top-k selection reads a broker's bundles as columns (``StatsView.columns``).

The values are the ones the eager JSON held, summed in the same order, so decisions do not change.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.frame import LoadFrame, is_sla_or_heartbeat, is_system_namespace, namespace_of
from lb_pipeline.model.javahash import JavaHashMap, concurrent_hash_map_order
from lb_pipeline.model.usage import percent_usage_array

JSON_NAMES = ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut")  # load_model.RESOURCES order
RATES = ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut")


class BundleDataView(Mapping):
    """bundle → ``BundleData`` JSON (short- and long-term averages) of the present bundles, built on lookup."""

    def __init__(self, orders: "BundleOrders", present: np.ndarray, averages, samples, topics):
        self._index, self._present = orders.index, present
        self._avg, self._n, self._topics = averages, samples, topics
        self._keys = orders.name_array[present].tolist()

    def __getitem__(self, bundle: str) -> dict:
        n = self._index.get(bundle)
        if n is None or not self._present[n]:
            raise KeyError(bundle)
        (short, long_), (ns, nl) = self._avg, self._n
        return {"shortTermData": {"numSamples": int(ns[n]), **dict(zip(RATES, short[n].tolist()))},
                "longTermData": {"numSamples": int(nl[n]), **dict(zip(RATES, long_[n].tolist()))},
                "topics": int(self._topics[n])}

    def __contains__(self, bundle: object) -> bool:
        n = self._index.get(bundle)  # type: ignore[arg-type]
        return n is not None and bool(self._present[n])

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class StatsView(Mapping):
    """One broker's ``lastStats``: its bundles (ascending bundle index) → ``NamespaceBundleStats``, built on lookup."""

    def __init__(self, orders: "BundleOrders", mine: np.ndarray, traffic, clients, topics):
        self._index, self._traffic, self._clients, self._topics = orders.index, traffic, clients, topics
        self._orders, self._at = orders, mine
        self._keys = orders.name_array[mine].tolist()
        self._mine: set[int] | None = None

    def _owns(self, n: int | None) -> bool:
        if self._mine is None:
            self._mine = set(self._at.tolist())
        return n is not None and n in self._mine

    def columns(self) -> dict:
        """What ``transfer_inputs.top_k_bundles`` reads, as arrays (no per-bundle JSON)."""
        n, x, c = self._at, self._traffic[self._at], self._clients[self._at]
        topics, ns = self._topics[n], self._orders.namespaces
        return {"names": self._keys, "namespaces": ns[n].tolist(), "system": self._orders.system[n],
                "msgThroughputIn": x[:, 2], "msgThroughputOut": x[:, 3], "msgRate": x[:, 0] + x[:, 1], "topics": topics,
                "connections": topics.astype(np.int64) + c[:, 1].astype(np.int64) + c[:, 0].astype(np.int64),
                "cacheSize": np.zeros(len(n), np.int64)}

    def topic_count(self) -> int:
        return int(self._topics[self._at].sum())

    def __getitem__(self, bundle: str) -> dict:
        n = self._index.get(bundle)
        if not self._owns(n):
            raise KeyError(bundle)
        x, c = self._traffic[n].tolist(), self._clients[n]
        return {**dict(zip(RATES, x)), "producerCount": int(c[0]), "consumerCount": int(c[1]),
                "topics": int(self._topics[n])}

    def __contains__(self, bundle: object) -> bool:
        n = self._index.get(bundle)  # type: ignore[arg-type]
        return self._owns(n)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class Owners(Mapping):
    """bundle → simulated owner of the present bundles that have a live one (what TransferShedder's owner check
    and the as-recorded baseline read), built when first read."""

    def __init__(self, names: list[str], brokers: list[str], owner: np.ndarray, owned: np.ndarray):
        self._args = (names, brokers, owner.copy(), owned)
        self._map: dict[str, str] | None = None

    def _get(self) -> dict[str, str]:
        if self._map is None:
            names, brokers, owner, owned = self._args
            self._map = {names[n]: brokers[owner[n]] for n in np.flatnonzero(owned).tolist()}
        return self._map

    def __getitem__(self, bundle: str) -> str:
        return self._get()[bundle]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())


class BundleOrders:
    """The bundles' hash-map orders per snapshot (``getBundleDataForLoadShedding``): they depend only on which
    bundles are present, so they are computed once per snapshot and per ``shed_skips_system_namespace``, and again
    when a simulated split changes the set (``version``)."""

    def __init__(self, names: list[str], index: dict[str, int]):
        self.names, self.index = names, index
        self.version = 0
        self.name_array = np.array(names, dtype=object)
        self.namespaces = np.array([namespace_of(b) for b in names], dtype=object)
        self.system = np.array([is_system_namespace(ns) for ns in self.namespaces], dtype=bool)
        self._cache: dict[tuple[int, int, bool], tuple] = {}

    def extend(self, names: list[str]) -> None:
        """Bundles added by a simulated split (``names`` and ``index`` are the caller's, already extended)."""
        ns = [namespace_of(b) for b in names]
        self.name_array = np.append(self.name_array, np.array(names, dtype=object))
        self.namespaces = np.append(self.namespaces, np.array(ns, dtype=object))
        self.system = np.append(self.system, np.array([is_system_namespace(x) for x in ns], dtype=bool))
        self.version += 1

    def at(self, snapshot: int, present: np.ndarray, skip_system: bool) -> tuple:
        """(bundle names in order, name → position, bundle index → position or -1, bundle index of each position,
        whether the order is exact)."""
        key = (snapshot, self.version, skip_system)
        if key not in self._cache:
            excluded = is_system_namespace if skip_system else is_sla_or_heartbeat
            keys = [self.names[n] for n in np.flatnonzero(present).tolist()]
            kept = [b for b in concurrent_hash_map_order(keys) if not excluded(namespace_of(b))]
            copy = JavaHashMap()  # Collectors.toMap
            order = copy.order(kept)
            where = np.array([self.index[b] for b in order], dtype=np.int64)
            pos_of = np.full(len(self.names), -1, np.int64)
            pos_of[where] = np.arange(len(where))
            self._cache = {key: (order, {b: p for p, b in enumerate(order)}, pos_of, where, copy.exact)}  # one at a time
        return self._cache[key]


def held_by(owner: np.ndarray, brokers, n_brokers: int) -> np.ndarray:
    """``np.isin(owner, brokers)`` for broker indices (-1: no owner) by a lookup table, a tenth of the time;
    a cycle asks it four times."""
    table = np.zeros(n_brokers + 1, bool)  # the last entry answers -1
    table[brokers] = True
    return table[owner]


def _stable_order(owners: np.ndarray, brokers: int) -> np.ndarray:
    """``np.argsort(owners, kind="stable")`` for broker indices: as 16-bit keys numpy sorts by radix, a tenth of
    the time of a 64-bit merge sort, and this runs twice a cycle."""
    return np.argsort(owners.astype(np.int16) if brokers < 2 ** 15 else owners, kind="stable")


def leader_load(h, i: int, live_idx: np.ndarray, owner: np.ndarray, traffic: np.ndarray, bt: np.ndarray,
                usage: np.ndarray, averages, samples, orders: BundleOrders, bundles=None) -> LoadData:
    """The ``LoadData`` of snapshot ``i``'s cycle: ``LocalBrokerData`` per live broker (``usage``: brokers × 5,
    ``bt``: brokers × 4 traffic they serve), ``BundleData`` per present bundle, the frame built on first use.
    ``bundles``: (present, clients, topics) of the simulated bundle set (default: the recorded bundles)."""
    present, clients, n_topics = bundles or (h.present[i], h.clients[i], h.topics[i])
    idx = np.flatnonzero(present & held_by(owner, live_idx, len(h.brokers)))
    own = owner[idx]  # a copy: placements move bundles while this cycle's view is still read
    by_owner = _stable_order(own, len(h.brokers))
    lo, hi = np.searchsorted(own[by_owner], live_idx, side="left"), np.searchsorted(own[by_owner], live_idx, side="right")
    B = len(h.brokers)
    counts = np.bincount(own, minlength=B)
    topics = np.bincount(own, weights=n_topics[idx], minlength=B)
    # TimeAverageBrokerData.reset: per broker, sums over its bundles in lastStats order (ascending bundle index)
    sums = {f"{w}{k}": np.bincount(own, weights=a[idx, f], minlength=B)
            for w, a in (("shortTerm", averages[0]), ("longTerm", averages[1]))
            for f, k in enumerate(("MsgRateIn", "MsgRateOut", "MsgThroughputIn", "MsgThroughputOut"))}
    reports = {}
    # the same values as Python floats, converted once per cycle rather than one numpy scalar at a time
    used, limits, rates, n_of = usage.tolist(), h.limits[i].tolist(), bt.tolist(), topics.tolist()
    averaged = {key: v.tolist() for key, v in sums.items()}
    for k, b in enumerate(live_idx.tolist()):
        mine = idx[by_owner[lo[k]:hi[k]]]
        stats = StatsView(orders, mine, traffic, clients, n_topics)
        d = {name: {"usage": u, "limit": lim} for name, u, lim in zip(JSON_NAMES, used[b], limits[b])}
        d.update(zip(RATES, rates[b]))
        d.update(lastStats=stats, bundles=list(stats), numTopics=int(n_of[b]),
                 timeAverageData={key: v[b] for key, v in averaged.items()}, **h.meta.get(h.brokers[b], {}))
        reports[h.brokers[b]] = d
    data = BundleDataView(orders, present, averages, samples, n_topics)

    def frame(skip_system: bool) -> LoadFrame:
        order = concurrent_hash_map_order(reports)
        bix = {b: k for k, b in enumerate(h.brokers)}
        at = np.array([bix[b] for b in order], dtype=np.int64)
        names, position, pos_of, where, exact = orders.at(i, present, skip_system)
        percents = np.stack([percent_usage_array(usage[at, r], h.limits[i, at, r]) for r in range(len(JSON_NAMES))], axis=1)
        pos, mine = pos_of[idx], own
        keep = pos >= 0
        pos, mine = pos[keep], mine[keep]
        by_pos = np.full(len(names), -1, np.int64)  # positions are distinct: ordered by a scatter, not a sort
        by_pos[pos] = np.arange(len(pos))
        by_pos = by_pos[by_pos >= 0]
        srt = by_pos[_stable_order(mine[by_pos], len(h.brokers))]  # = np.lexsort((pos, mine))
        pos, mine = pos[srt], mine[srt]
        first, last = np.searchsorted(mine, at, side="left"), np.searchsorted(mine, at, side="right")
        short = averages[0][where]
        return LoadFrame(order, percents, bt[at, 0], bt[at, 1], bt[at, 2], bt[at, 3],
                         counts[at].astype(np.int64), names, short[:, 0] + short[:, 1], short[:, 2] + short[:, 3],
                         [pos[a:z] for a, z in zip(first.tolist(), last.tolist())], position, exact)

    return LoadData(reports, data, frame_builder=frame)
