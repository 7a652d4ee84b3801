"""Namespace isolation policies (``NamespaceIsolationPolicies``, ``SimpleResourceAllocationPolicies``) and the brokers
they allow a bundle on (``LoadManagerShared.applyNamespacePolicies``), for the modular placement path and the
extensible leader's ``BrokerIsolationPoliciesFilter`` alike; held to Pulsar's own classes by
``tests/test_conformance_policies.py``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lb_pipeline.model import regex


@dataclass(frozen=True)
class IsolationPolicy:
    """``NamespaceIsolationDataImpl`` with its ``min_available`` auto-failover policy (regexes: whole match)."""

    name: str
    namespaces: tuple[str, ...]
    primary: tuple[str, ...]
    secondary: tuple[str, ...]
    min_limit: int
    _found: dict = field(default_factory=dict, init=False, repr=False, compare=False)  # (list, name) → matched

    @classmethod
    def from_json(cls, name: str, data: dict) -> "IsolationPolicy":
        failover = data.get("auto_failover_policy") or {}
        if failover.get("policy_type", "min_available") != "min_available":
            raise ValueError(f"isolation policy {name!r}: unknown auto_failover_policy {failover.get('policy_type')!r}")
        params = failover.get("parameters") or {}
        policy = cls(name, tuple(data.get("namespaces") or ()), tuple(data.get("primary") or ()),
                     tuple(data.get("secondary") or ()), int(params.get("min_limit", 1)))
        for key in ("namespaces", "primary", "secondary"):
            try:
                regex.compile_all(getattr(policy, key))
            except (regex.Unsupported, re.error) as exc:
                raise ValueError(f"isolation policy {name!r}: {key} regex {exc}") from None
        return policy

    # String.matches in Pulsar; here a matcher linear in the name, so a hostile regex cannot hang a replay, and
    # each (list, name) is answered once per policy: placement asks for every broker of every placed bundle
    def _any(self, patterns: str, name: str) -> bool:
        found = self._found.get((patterns, name))
        if found is None:
            found = self._found[patterns, name] = regex.fullmatch_any(getattr(self, patterns), name)
        return found

    def matches(self, namespace: str) -> bool:
        return self._any("namespaces", namespace)

    def is_primary(self, host: str) -> bool:
        return self._any("primary", host)

    def is_secondary(self, host: str) -> bool:
        return self._any("secondary", host)


def isolation_policies(data: dict | None) -> list[IsolationPolicy]:
    """A cluster's ``namespaceIsolationPolicies`` (name → policy) in the order of the stored document, which is the
    order the admin API lists them in: the first policy whose namespace regex matches applies
    (``NamespaceIsolationPolicies.getPolicyByNamespace`` walks the map Jackson read the document into, a
    ``LinkedHashMap``; ``tests/test_conformance_policies.py`` holds it to Pulsar's own classes)."""
    data = data or {}
    return [IsolationPolicy.from_json(n, policy) for n, policy in data.items()]


def allowed_brokers(policy: IsolationPolicy | None, load, state, non_persistent: bool = False) -> list[str]:
    """The available brokers ``applyNamespacePolicies`` keeps for a namespace under ``policy`` (None: no policy
    matches it), in the order of ``state.available`` (a ``ClusterState``); ``load.brokers``: each broker's report
    or lookup data. Without a policy a broker serves the bundle where its ``persistentTopicsEnabled`` says so, or,
    for a bundle flagged ``hasNonPersistentTopic`` (``non_persistent``), its ``nonPersistentTopicsEnabled``
    (a broker without either: it does not; both default to true in ``LocalBrokerData``)."""
    primaries, secondaries = [], []
    for broker in state.available:
        if ":" not in broker:
            continue  # Pulsar cannot parse a host from it
        host = broker[:broker.rindex(":")]
        if policy is not None:
            if policy.is_primary(host):
                primaries.append(broker)
            elif policy.is_secondary(host):
                secondaries.append(broker)
            continue
        report = load.brokers.get(broker)
        if report is None or not report.get("nonPersistentTopicsEnabled" if non_persistent else "persistentTopicsEnabled",
                                            True):
            continue
        if not any(p.is_primary(host) for p in state.isolation):
            secondaries.append(broker)
    if policy is None:
        return secondaries
    return primaries + (secondaries if len(primaries) < policy.min_limit else [])
