"""Anti-affinity namespace groups across brokers and failure domains.

Reproduces ``impl/LoadManagerShared`` (``getAntiAffinityNamespaceOwnedBrokers``,
``filterAntiAffinityGroupOwnedBrokers``, ``shouldAntiAffinityNamespaceUnload``) and the extensible
``AntiAffinityGroupPolicyHelper``. Two counting models:

* modular: per broker, the number of **namespaces** of the group it owns at least one bundle of;
* extensible: per broker, the number of **bundles** (Owned, with a destination) whose namespace is in the group.

Group names compare as Pulsar compares them, raw, with ``equalsIgnoreCase``; a blank one (``StringUtils.isBlank``) is no
group (``model.java_strings``). Brokers outside every failure domain belong to ``"default"``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lb_pipeline.model.java_strings import ignore_case_key, is_blank

DEFAULT_DOMAIN = "default"


def _group_of(namespace: str, groups: Mapping[str, str | None]) -> str | None:
    """The namespace's group as Pulsar compares it (``java_strings``): None when blank, else a key equal for two
    names ``equalsIgnoreCase`` holds for."""
    g = groups.get(namespace)
    return None if is_blank(g) else ignore_case_key(g)


def owned_counts_modular(target_ns: str, ownership: Mapping[str, str], groups: Mapping[str, str | None]) -> dict[str, int] | None:
    """``ownership``: bundle full name → owner broker. Counts namespaces of the target's group per broker;
    ``None`` when the target namespace has no group (no filtering at all)."""
    group = _group_of(target_ns, groups)
    if group is None:
        return None
    per_broker: dict[str, set[str]] = defaultdict(set)
    for bundle, broker in ownership.items():
        ns = bundle.rsplit("/", 1)[0]
        if _group_of(ns, groups) == group:
            per_broker[broker].add(ns)
    return {b: len(nss) for b, nss in per_broker.items()}


def owned_counts_extensible(target_ns: str, ownership: Mapping[str, str], groups: Mapping[str, str | None]) -> dict[str, int] | None:
    """Counts **bundles** of the target's group per broker (service-unit state entries in state Owned)."""
    group = _group_of(target_ns, groups)
    if group is None:
        return None
    counts: dict[str, int] = defaultdict(int)
    for bundle, broker in ownership.items():
        if broker and _group_of(bundle.rsplit("/", 1)[0], groups) == group:
            counts[broker] += 1
    return dict(counts)


def filter_candidates(candidates: Iterable[str], counts: Mapping[str, int] | None,
                      broker_domain: Mapping[str, str] | None = None, domains_enabled: bool = False) -> list[str]:
    """``filterAntiAffinityGroupOwnedBrokers``: keep the domains, then the brokers, owning the fewest."""
    kept = list(candidates)
    if not kept or counts is None:
        return kept
    if domains_enabled and broker_domain:
        dom_sum: dict[str, int] = defaultdict(int)
        for b in kept:
            dom_sum[broker_domain.get(b, DEFAULT_DOMAIN)] += counts.get(b, 0)
        least_dom = min(dom_sum.values())
        kept = [b for b in kept if dom_sum[broker_domain.get(b, DEFAULT_DOMAIN)] == least_dom]
    least = 0 if any(b not in counts for b in kept) else min(counts[b] for b in kept)
    if least == 0:
        return [b for b in kept if counts.get(b, 0) == 0]
    return [b for b in kept if counts[b] == least]


def should_unload(current_broker: str, candidates: Iterable[str], counts: Mapping[str, int] | None) -> bool:
    """``shouldAntiAffinityNamespaceUnload``: unload if some candidate owns none of the group, or the current
    broker (counted only as one of the candidates) owns more than the least, or not every candidate owns the
    least."""
    if not counts:
        return True
    candidates = list(candidates)
    least, current = 2**31 - 1, 0
    for b in candidates:
        n = counts.get(b, 0)
        if b == current_broker:
            current = n
        least = min(least, n)
    if least == 0 or current > least:
        return True
    return len(candidates) != sum(1 for b in candidates if counts.get(b, 0) == least)


@dataclass(frozen=True)
class AuditFinding:
    group: str
    scope: str  # "broker" or "domain"
    place: str  # the broker or domain holding too many of the group
    namespaces: tuple[str, ...]
    count: int
    least: int
    message: str


def audit(ownership: Mapping[str, str], groups: Mapping[str, str | None], brokers: Iterable[str],
          broker_domain: Mapping[str, str] | None = None) -> list[AuditFinding]:
    """Every anti-affinity group whose namespaces are unevenly spread: a broker (or domain) holding more than
    one namespace of the group while another broker (domain) holds fewer."""
    brokers = sorted(brokers)
    by_group: dict[str, set[str]] = defaultdict(set)
    for ns in groups:
        if (g := _group_of(ns, groups)) is not None:
            by_group[g].add(ns)
    findings = []
    for group, namespaces in sorted(by_group.items()):
        per_broker: dict[str, set[str]] = {b: set() for b in brokers}
        for bundle, broker in ownership.items():
            ns = bundle.rsplit("/", 1)[0]
            if ns in namespaces and broker in per_broker:
                per_broker[broker].add(ns)
        scopes = [("broker", per_broker)]
        if broker_domain:
            per_domain: dict[str, set[str]] = defaultdict(set)
            for b in brokers:
                per_domain[broker_domain.get(b, DEFAULT_DOMAIN)] |= per_broker[b]
            scopes.append(("domain", dict(per_domain)))
        for scope, places in scopes:
            if not places:
                continue
            least = min(len(v) for v in places.values())
            for place, nss in sorted(places.items()):
                if len(nss) > 1 and len(nss) > least:
                    findings.append(AuditFinding(group, scope, place, tuple(sorted(nss)), len(nss), least,
                                                 f"{scope} {place} holds {len(nss)} namespaces of group {group} "
                                                 f"while another {scope} holds {least}"))
    return findings


@dataclass(frozen=True)
class Placement:
    """A bundle of an anti-affinity group that arrived on a broker Pulsar's filter would not have kept."""

    bundle: str
    group: str
    broker: str  # where it arrived
    source: str | None
    count: int  # namespaces of the group the broker held besides this bundle's
    least: int  # the fewest any live broker held
    kept: tuple[str, ...]  # the brokers the filter keeps (modular counting, no failure domains)


def _kept_anywhere(namespace: str, ownership: Mapping[str, str], groups: Mapping[str, str | None], brokers: list[str],
                   broker_domain: Mapping[str, str] | None) -> set[str]:
    """Brokers Pulsar's anti-affinity filter keeps for a bundle of ``namespace`` under any of its counting models
    (modular: namespaces; extensible: bundles) with failure domains on or off."""
    kept: set[str] = set()
    for counts in (owned_counts_modular(namespace, ownership, groups), owned_counts_extensible(namespace, ownership, groups)):
        for domains in (False, True):
            kept |= set(filter_candidates(brokers, counts, broker_domain, domains and bool(broker_domain)))
    return kept


def placements_pulsar_would_not_make(before: Mapping[str, str], after: Mapping[str, str],
                                     groups: Mapping[str, str | None], brokers: Iterable[str],
                                     broker_domain: Mapping[str, str] | None = None) -> list[Placement]:
    """Bundles of a group's namespaces that changed owner between two snapshots (``before``, ``after``: bundle →
    owner; ``brokers``: the live brokers of ``after``) onto a broker that Pulsar's placement would not pick: one the
    anti-affinity filter (``LoadManagerShared.filterAntiAffinityGroupOwnedBrokers``) drops, whether it counted from
    the ownership the move started from or the one it ended in (moves between two snapshots come in an unknown
    order), with or without the broker it left among the candidates (a restarting broker is down while its
    bundles are placed), under either load manager's counting, with failure domains on or off. Uneven spreads that
    Pulsar's own placement leaves (more namespaces than brokers, a broker that was down, a group set after the
    bundles were placed) are not such placements. Bundles that appear (a split's children stay on the parent's
    owner) are not placements either."""
    brokers = sorted(brokers)
    out = []
    for bundle, broker in sorted(after.items()):
        source = before.get(bundle)
        ns = bundle.rsplit("/", 1)[0]
        group = _group_of(ns, groups)
        if group is None or source is None or source == broker or broker not in brokers:
            continue
        states = [{b: o for b, o in before.items() if b != bundle}, {b: o for b, o in after.items() if b != bundle}]
        others = [b for b in brokers if b != source]  # a restarting source was down while its bundles were placed
        if any(broker in _kept_anywhere(ns, s, groups, c, broker_domain) for s in states for c in (brokers, others)):
            continue
        counts = owned_counts_modular(ns, states[0], groups) or {}
        kept = filter_candidates(brokers, counts)
        out.append(Placement(bundle, group, broker, source, counts.get(broker, 0),
                             min(counts.get(b, 0) for b in brokers), tuple(kept)))
    return out
