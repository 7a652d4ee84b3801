"""What TransferShedder reads: ``BrokerLoadData`` and top-k bundles per broker, as published or derived.

A cluster on the extensible load manager publishes both (``lb/broker-load-data``, ``lb/top-bundles``); for a
modular cluster :func:`derive_from_modular` computes what its brokers *would* publish from their
``LocalBrokerData`` (each broker's ``BrokerLoadData`` as its reporter writes it, ``model.load_reporter``;
``TopKBundles.update`` over ``lastStats``) — what a
user migrating to the extensible load manager wants to see — and the result says which input was used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from lb_pipeline.algorithms.shedding.frame import is_system_namespace, namespace_of
from lb_pipeline.model.load_reporter import LoadDataReporter
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.java_strings import is_blank
from lb_pipeline.model.usage import RESOURCES


@dataclass
class ExtensibleLoad:
    brokers: dict[str, dict]  # broker → BrokerLoadData JSON (the load data store, in its iteration order)
    top_bundles: Mapping[str, list[dict]]  # broker → [{"bundleName": …, "stats": NamespaceBundleStats}] ascending
    available: list[str]
    owners: dict[str, str] = field(default_factory=dict)  # bundle → owner (for the owner check), optional
    namespaces_with_policies: set[str] = field(default_factory=set)
    source: str = "BrokerLoadData"
    policies_known: bool = True  # False: no cluster policies at all (Pulsar's unit-test mode: everything moves)
    # what isTransferable's broker filters read (``extensible_filters``): each broker's lookup data (None: every
    # broker runs the configured load manager and version), the cluster's isolation policies, anti-affinity groups
    # and failure domains, and the service-unit channel's owned bundles (None: ``owners``)
    lookup: dict[str, dict] | None = None
    isolation: list = field(default_factory=list)
    groups: dict[str, str | None] = field(default_factory=dict)
    broker_domain: dict[str, str] = field(default_factory=dict)
    owned: dict[str, str] | None = None
    non_persistent: frozenset[str] = frozenset()  # bundles flagged ``hasNonPersistentTopic`` (``ClusterState``)


def has_policies(namespace: str, groups: Mapping[str, str | None], isolation) -> bool:
    """``TopKBundles.hasPolicies`` and the ``isLoadBalancerSheddingBundlesWithPoliciesEnabled`` gate: an isolation
    policy matches the namespace, or it has an anti-affinity group (``StringUtils.isNotBlank``)."""
    return not is_blank(groups.get(namespace)) or any(p.matches(namespace) for p in isolation)


def sheds_with_policies(namespace: str, namespaces_with_policies: set[str], config: PulsarConfig) -> bool:
    """``TransferShedder.isLoadBalancerSheddingBundlesWithPoliciesEnabled``: a bundle of a namespace with an
    isolation policy or an anti-affinity group moves only if ``loadBalancerSheddingBundlesWithPoliciesEnabled``."""
    if namespace in namespaces_with_policies:
        return config.get_bool("loadBalancerSheddingBundlesWithPoliciesEnabled")
    return True


def _round(x: float) -> int:
    """Java ``Math.round(double)``: floor(x + 0.5), NaN → 0, saturating."""
    if x != x:
        return 0
    if math.isinf(x):
        return 2**63 - 1 if x > 0 else -(2**63)
    return max(-(2**63), min(2**63 - 1, math.floor(x + 0.5)))


def _long_div(a: int, b: int) -> int:
    q = abs(a) // b
    return q if a >= 0 else -q


def stats_columns(stats: Mapping[str, Mapping]) -> dict:
    """A ``lastStats`` mapping as columns: bundle names, their namespaces and the ``NamespaceBundleStats`` fields the
    top-k selection reads. A mapping that already holds its bundles as arrays gives them through ``columns()``."""
    if hasattr(stats, "columns"):
        return stats.columns()
    rows = list(stats.items())
    f = lambda k: np.array([float(s.get(k, 0.0) or 0.0) for _, s in rows], dtype=np.float64)  # noqa: E731
    i = lambda k: np.array([int(s.get(k, 0) or 0) for _, s in rows], dtype=object)  # noqa: E731
    namespaces = [namespace_of(n) for n, _ in rows]
    return {"names": [n for n, _ in rows], "namespaces": namespaces,
            "system": np.array([is_system_namespace(ns) for ns in namespaces], dtype=bool),
            "msgThroughputIn": f("msgThroughputIn"), "msgThroughputOut": f("msgThroughputOut"),
            "msgRate": f("msgRateIn") + f("msgRateOut"),
            "topics": i("topics"), "connections": i("topics") + i("consumerCount") + i("producerCount"),
            "cacheSize": i("cacheSize")}


def _round_array(x: np.ndarray) -> list[int]:
    """:func:`_round` element-wise (finite values: floor(x + 0.5) in double, as Java's ``Math.round``)."""
    if np.isfinite(x).all() and (np.abs(x) < 2.0**62).all():
        return np.floor(x + 0.5).astype(np.int64).tolist()
    return [_round(v) for v in x.tolist()]


def _long_div_array(a: np.ndarray, b: int) -> list[int]:
    """:func:`_long_div` element-wise."""
    q = np.abs(a) // b
    return np.where(a >= 0, q, -q).tolist()


def top_k_bundles(stats: Mapping[str, Mapping], k: int, with_policies: set[str], config: PulsarConfig) -> list[dict]:
    """``TopKBundles.update``: bundles with traffic, outside system namespaces (and, unless
    ``loadBalancerSheddingBundlesWithPoliciesEnabled``, outside namespaces with policies); the ``k`` largest by
    ``NamespaceBundleStats.compareTo``, partition-sorted as Pulsar does, listed in ascending order."""
    allow = config.get_bool("loadBalancerSheddingBundlesWithPoliciesEnabled")
    c = stats_columns(stats)
    keep = (c["msgThroughputIn"] + c["msgThroughputOut"] != 0) & ~c["system"]
    if not allow and with_policies:
        keep &= np.array([ns not in with_policies for ns in c["namespaces"]], dtype=bool)
    arr = np.flatnonzero(keep).tolist()
    if not arr or k <= 0:
        return []
    k = min(k, len(arr))
    sel = np.asarray(arr, dtype=np.int64)
    # NamespaceBundleStats.compareTo as a key: bandwidth in, out (100 kB resolution), msg rate (100/s), topics plus
    # connections (500), cache size (100 kB)
    keys = list(zip(_round_array(c["msgThroughputIn"][sel] / 100000.0), _round_array(c["msgThroughputOut"][sel] / 100000.0),
                    _round_array(c["msgRate"][sel] / 100.0), _long_div_array(c["connections"][sel], 500),
                    _long_div_array(c["cacheSize"][sel], 100000)))
    items = list(zip(keys, arr))
    start, end, target = 0, len(items) - 1, k - 1
    while start < end:  # partitionSort: three-way partition around the last element, descending
        lo, hi, mid = start, end, start
        pivot = items[hi][0]
        while mid <= hi:
            x = items[mid][0]
            if pivot < x:
                items[lo], items[mid] = items[mid], items[lo]
                lo, mid = lo + 1, mid + 1
            elif pivot > x:
                items[mid], items[hi] = items[hi], items[mid]
                hi -= 1
            else:
                mid += 1
        if lo <= target < mid:
            end = lo
            break
        if target < lo:
            end = lo - 1
        else:
            start = mid
    items[:end] = sorted(items[:end], key=lambda t: t[0], reverse=True)  # stable, like Collections.sort
    names = c["names"]
    return [{"bundleName": names[n], "stats": stats[names[n]]} for _, n in reversed(items[:k])]


@dataclass
class DerivedLoadState:
    """Each broker's reporter (``model.load_reporter``): its ``BrokerLoadData`` updated every 5 s, and what it last
    wrote to the store TransferShedder reads."""

    brokers: dict[str, LoadDataReporter] = field(default_factory=dict)

    def restarted(self, brokers) -> None:
        """These brokers restarted (or left): each runs a new reporter when it reports again."""
        for broker in brokers:
            self.brokers.pop(broker, None)

    def changed(self, brokers, now_ms: int) -> None:
        """A bundle left, arrived on or split on each of these brokers: their reporters clear their data."""
        for broker in brokers:
            if broker in self.brokers:
                self.brokers[broker].clear(now_ms)


def derive_from_modular(reports: Mapping[str, dict], config: PulsarConfig, now_ms: int,
                        state: DerivedLoadState | None = None, groups: Mapping[str, str | None] | None = None,
                        owners: Mapping[str, str] | None = None, topics: Mapping[str, int] | None = None,
                        isolation: list | None = None, domains: Mapping[str, str] | None = None) -> ExtensibleLoad:
    """``BrokerLoadData`` and top-k bundles as the extensible reporter would publish them for these brokers.
    ``topics`` (broker → its topic count, :func:`topic_counts`) spares counting them again for the same reports;
    ``isolation`` (``selection.IsolationPolicy`` list) and ``domains`` (broker → failure domain) are the cluster's
    policies, which the broker filters of ``isTransferable`` read with the anti-affinity ``groups``."""
    state = state or DerivedLoadState()
    k = config.get_int("loadBalancerMaxNumberOfBundlesInBundleLoadReport")
    groups, isolation = dict(groups or {}), list(isolation or [])
    named = set(groups)
    if isolation:  # the namespaces an isolation policy may match: those of the reported bundles
        named |= {namespace_of(b) for r in reports.values() for b in (r.get("lastStats") or {})}
    with_policies = {ns for ns in named if has_policies(ns, groups, isolation)}
    brokers, last_stats = {}, {}
    for b, r in reports.items():
        stats = last_stats[b] = r.get("lastStats") or {}
        usage = {res: (float((r.get(res) or {}).get("usage", 0.0)), float((r.get(res) or {}).get("limit", 0.0)))
                 for res in RESOURCES}
        stored = state.brokers.setdefault(b, LoadDataReporter()).report(
            (usage, r.get("msgThroughputIn", 0.0), r.get("msgThroughputOut", 0.0), r.get("msgRateIn", 0.0),
             r.get("msgRateOut", 0.0), len(stats), topics[b] if topics else _topic_count(stats)), config, now_ms)
        if stored is not None:  # a broker whose data was just removed is missing from the store until it reports
            brokers[b] = stored
    return ExtensibleLoad(brokers, TopBundles(last_stats, k, with_policies, config), list(reports),
                          owners if owners is not None else {}, with_policies,
                          source="derived from the modular LocalBrokerData", isolation=isolation, groups=groups,
                          broker_domain=dict(domains or {}))


def topic_counts(reports: Mapping[str, dict]) -> dict[str, int]:
    """Broker → the topics of its ``lastStats`` (what ``derive_from_modular`` reports as ``topics``)."""
    return {b: _topic_count(r.get("lastStats") or {}) for b, r in reports.items()}


def _topic_count(stats: Mapping[str, Mapping]) -> int:
    if hasattr(stats, "topic_count"):
        return stats.topic_count()
    return int(stats_columns(stats)["topics"].sum())


class TopBundles(Mapping):
    """broker → its ``TopKBundles`` list, selected when first read. TransferShedder reads only the brokers it pairs
    (``top_bundles.get(max)``, ``.get(min)``); selecting for every broker of every cycle was half of a simulated
    TransferShedder run. The brokers' ``lastStats`` are read at lookup, within the cycle that built them."""

    def __init__(self, last_stats: dict[str, Mapping], k: int, with_policies: set[str], config: PulsarConfig):
        self._stats, self._args, self._tops = last_stats, (k, with_policies, config), {}

    def __getitem__(self, broker: str) -> list[dict]:
        if broker not in self._tops:
            self._tops[broker] = top_k_bundles(self._stats[broker], *self._args)
        return self._tops[broker]

    def __iter__(self):
        return iter(self._stats)

    def __len__(self) -> int:
        return len(self._stats)
