"""What TransferShedder reads: ``BrokerLoadData`` and top-k bundles per broker, as published or derived.

A cluster on the extensible load manager publishes both (``lb/broker-load-data``, ``lb/top-bundles``); for a
modular cluster :func:`derive_from_modular` computes what its brokers *would* publish from their
``LocalBrokerData`` (``BrokerLoadData.update`` each snapshot, ``TopKBundles.update`` over ``lastStats``) — what a
user migrating to the extensible load manager wants to see — and the result says which input was used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from lb_pipeline.algorithms.shedding.frame import is_system_namespace, namespace_of
from lb_pipeline.model.broker_load_data import BrokerLoadData
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.usage import RESOURCES


@dataclass
class ExtensibleLoad:
    brokers: dict[str, dict]  # broker → BrokerLoadData JSON (the load data store, in its iteration order)
    top_bundles: dict[str, list[dict]]  # broker → [{"bundleName": …, "stats": NamespaceBundleStats}] ascending
    available: list[str]
    owners: dict[str, str] = field(default_factory=dict)  # bundle → owner (for the owner check), optional
    namespaces_with_policies: set[str] = field(default_factory=set)
    source: str = "BrokerLoadData"
    policies_known: bool = True  # False: no cluster policies at all (Pulsar's unit-test mode: everything moves)


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


def stats_key(s: Mapping) -> tuple:
    """``NamespaceBundleStats.compareTo`` as a key: bandwidth in, out (100 kB resolution), msg rate (100/s), topics
    plus connections (500), cache size (100 kB)."""
    f = lambda k: float(s.get(k, 0.0) or 0.0)  # noqa: E731
    i = lambda k: int(s.get(k, 0) or 0)  # noqa: E731
    return (_round(f("msgThroughputIn") / 100000.0), _round(f("msgThroughputOut") / 100000.0),
            _round((f("msgRateIn") + f("msgRateOut")) / 100.0),
            _long_div(i("topics") + i("consumerCount") + i("producerCount"), 500), _long_div(i("cacheSize"), 100000))


def top_k_bundles(stats: Mapping[str, Mapping], k: int, with_policies: set[str], config: PulsarConfig) -> list[dict]:
    """``TopKBundles.update``: bundles with traffic, outside system namespaces (and, unless
    ``loadBalancerSheddingBundlesWithPoliciesEnabled``, outside namespaces with policies); the ``k`` largest by
    ``NamespaceBundleStats.compareTo``, partition-sorted as Pulsar does, listed in ascending order."""
    allow = config.get_bool("loadBalancerSheddingBundlesWithPoliciesEnabled")
    arr = [(name, s) for name, s in stats.items()
           if float(s.get("msgThroughputIn", 0.0)) + float(s.get("msgThroughputOut", 0.0)) != 0
           and not is_system_namespace(namespace_of(name)) and (allow or namespace_of(name) not in with_policies)]
    if not arr or k <= 0:
        return []
    k = min(k, len(arr))
    keys = [stats_key(s) for _, s in arr]
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
    return [{"bundleName": name, "stats": s} for _, (name, s) in reversed(items[:k])]


@dataclass
class DerivedLoadState:
    """Each broker's ``BrokerLoadData`` as its reporter would have updated it, once per snapshot."""

    brokers: dict[str, BrokerLoadData] = field(default_factory=dict)


def derive_from_modular(reports: Mapping[str, dict], config: PulsarConfig, now_ms: int,
                        state: DerivedLoadState | None = None, groups: Mapping[str, str | None] | None = None,
                        owners: Mapping[str, str] | None = None) -> ExtensibleLoad:
    """``BrokerLoadData`` and top-k bundles as the extensible reporter would publish them for these brokers."""
    state = state or DerivedLoadState()
    k = config.get_int("loadBalancerMaxNumberOfBundlesInBundleLoadReport")
    with_policies = {ns for ns, g in (groups or {}).items() if g}
    brokers, tops = {}, {}
    for b, r in reports.items():
        stats = r.get("lastStats") or {}
        usage = {res: (float((r.get(res) or {}).get("usage", 0.0)), float((r.get(res) or {}).get("limit", 0.0)))
                 for res in RESOURCES}
        data = state.brokers.setdefault(b, BrokerLoadData())
        data.update(usage, r.get("msgThroughputIn", 0.0), r.get("msgThroughputOut", 0.0), r.get("msgRateIn", 0.0),
                    r.get("msgRateOut", 0.0), len(stats), sum(int(s.get("topics", 0)) for s in stats.values()),
                    config, now_ms)
        brokers[b] = data.to_json()
        tops[b] = top_k_bundles(stats, k, with_policies, config)
    return ExtensibleLoad(brokers, tops, list(reports), dict(owners or {}), with_policies,
                          source="derived from the modular LocalBrokerData")
