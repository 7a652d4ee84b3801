"""Pulsar's whole placement path: ``ModularLoadManagerImpl.selectBroker`` and ``selectBrokerForAssignment``.

``select`` (what ``doLoadShedding`` asks for each unloaded bundle, 4.0.8):

1. candidates = ``LoadManagerShared.applyNamespacePolicies`` over the available brokers: with a namespace
   isolation policy, its primary brokers (plus the secondaries when fewer primaries than ``min_limit``); without,
   the shared brokers (no policy's primary) that serve persistent topics;
2. ``filterBrokersWithLargeTopicCount``: brokers whose topics plus preallocated topics exceed
   ``loadBalancerBrokerMaxTopics`` leave (unless none would remain);
3. ``filterAntiAffinityGroupOwnedBrokers`` (failure domains first when ``failureDomainsEnabled``);
4. ``removeMostServicingBrokersForNamespace`` when ``loadBalancerDistributeBundlesEvenlyEnabled`` (always for
   ``pulsar/system``): keep the brokers holding the fewest bundles of the namespace;
5. broker filters: the load-manager class filter, and the version filter with ``preferLaterVersions``;
6. back to step 1's set if nothing is left; the placement strategy picks; if its pick is over the overload
   threshold, the strategy picks again among step 1's set.

Counts come from the leader's broker → namespace → bundle-range cache: each broker's reported bundles
(``lastStats``) plus its preallocations. ``assign`` (a lookup of an unowned bundle: new, split or orphaned)
preallocates the chosen broker, so the next choice in the same cycle sees that bundle's load and topics; a
shedding destination is not preallocated in 4.0.8 (the unload carries the broker as an affinity instead), so
several bundles shed in one cycle can land on the same broker, as in Pulsar. :meth:`new_cycle` drops
preallocations when fresh reports arrive (``updateBundleData``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from lb_pipeline.algorithms import anti_affinity as aa
from lb_pipeline.algorithms.shedding.avg_shedder import AvgShedder
from lb_pipeline.algorithms.shedding.common import LoadData, weights_of
from lb_pipeline.algorithms.shedding.frame import DEFAULT_RATE, DEFAULT_THROUGHPUT, SYSTEM_NAMESPACE, namespace_of
from lb_pipeline.model.java_strings import ignore_case_key, is_blank
from lb_pipeline.algorithms.shedding.isolation import IsolationPolicy, allowed_brokers
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.javahash import JavaHashMap

_DEFAULT_AVG = {"msgRateIn": DEFAULT_RATE, "msgRateOut": DEFAULT_RATE, "msgThroughputIn": DEFAULT_THROUGHPUT,
                "msgThroughputOut": DEFAULT_THROUGHPUT}


@dataclass
class ClusterState:
    """What placement reads besides ``LoadData``: the available brokers and the cluster's policies."""

    available: list[str]
    isolation: list[IsolationPolicy] = field(default_factory=list)
    groups: dict[str, str | None] = field(default_factory=dict)  # namespace → anti-affinity group
    broker_domain: dict[str, str] = field(default_factory=dict)  # broker → failure domain
    # bundles the leader's lookup flagged ``hasNonPersistentTopic`` (a client looked up a non-persistent topic of it:
    # placed only on brokers that serve non-persistent topics)
    non_persistent: frozenset[str] = frozenset()


class LookupFailed(Exception):
    """``selectBroker`` picked a broker the leader holds no load data of and read its report: a
    ``NullPointerException`` in Pulsar, which ends the lookup (the bundle stays unassigned) or, in
    ``doLoadShedding``, the cycle (its remaining unloads are not made). ``args[0]``: the broker."""


@dataclass
class ModularPlacement:
    strategy: object
    preallocated: dict[str, dict[str, dict]] = field(default_factory=dict)  # broker → bundle → BundleData
    preallocated_to: dict[str, str] = field(default_factory=dict)  # bundle → broker
    candidate_set: JavaHashMap = field(default_factory=JavaHashMap)  # brokerCandidateCache (a reused HashSet)
    _ranges: tuple = (None, None)  # (the LoadData's reports, their broker → namespace → ranges cache)
    _allowed: tuple = (None, None, None)  # (state, reports, policy name or None → brokers it allows)

    def new_cycle(self) -> None:
        self.preallocated.clear()
        self.preallocated_to.clear()
        self._ranges = (None, None)
        self._allowed = (None, None, None)

    def on_active_brokers_change(self, active) -> None:
        hook = getattr(self.strategy, "on_active_brokers_change", None)
        if hook:
            hook(active)

    # --- the pieces of the pipeline -------------------------------------------------------------------------
    def namespace_policy_candidates(self, bundle: str, load: LoadData, state: ClusterState) -> list[str]:
        """``applyNamespacePolicies`` (persistent or non-persistent topics as the bundle is flagged). The brokers a
        policy (or no policy) allows depend only on the brokers and their reports: worked out once per policy, flag
        and cycle, as placement asks for every bundle it places; the reused candidate set still orders each answer."""
        ns = namespace_of(bundle)
        policy = next((p for p in state.isolation if p.matches(ns)), None)
        if self._allowed[0] is not state or self._allowed[1] is not load.brokers:
            self._allowed = (state, load.brokers, {})
        allowed = self._allowed[2]
        flagged = bundle in state.non_persistent
        key = (None if policy is None else policy.name, flagged)
        if key not in allowed:
            allowed[key] = allowed_brokers(policy, load, state, flagged)
        return self.candidate_set.order(allowed[key])

    def ranges(self, load: LoadData) -> dict[str, dict[str, set[str]]]:
        """The broker → namespace → bundle-range cache: reported bundles plus preallocations (built once per set
        of reports, kept up to date by :meth:`assign`)."""
        if self._ranges[0] is not load.brokers:
            out: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
            for broker, report in load.brokers.items():
                for bundle in list(report.get("lastStats") or ()) + list(self.preallocated.get(broker, ())):
                    ns, rng = bundle.rsplit("/", 1)
                    out[broker][ns].add(rng)
            self._ranges = (load.brokers, out)
        return self._ranges[1]

    def anti_affinity_counts(self, ns: str, load: LoadData, state: ClusterState) -> dict[str, int] | None:
        """``getAntiAffinityNamespaceOwnedBrokers``: per broker, namespaces of the group it holds (None: no group)."""
        group = state.groups.get(ns)
        if is_blank(group):  # StringUtils.isNotBlank, then equalsIgnoreCase on the raw names (java_strings)
            return None
        key = ignore_case_key(group)
        members = [other for other, g in state.groups.items() if not is_blank(g) and ignore_case_key(g) == key]
        counts: dict[str, int] = {}
        for broker, by_ns in self.ranges(load).items():  # the group's namespaces, not every one a broker holds
            n = sum(1 for other in members if by_ns.get(other))
            if n:
                counts[broker] = n
        return counts

    def should_policies_unload(self, bundle: str, current: str, load: LoadData, state: ClusterState) -> bool:
        """``shouldNamespacePoliciesUnload``: another broker may own the bundle under the isolation policies."""
        return any(b != current for b in self.namespace_policy_candidates(bundle, load, state))

    def should_anti_affinity_unload(self, bundle: str, current: str, load: LoadData, state: ClusterState) -> bool:
        counts = self.anti_affinity_counts(namespace_of(bundle), load, state)
        if counts is None:
            return True
        return aa.should_unload(current, self.namespace_policy_candidates(bundle, load, state), counts)

    # --- selectBroker / selectBrokerForAssignment -------------------------------------------------------------
    def select(self, bundle: str, load: LoadData, config: PulsarConfig, state: ClusterState) -> str | None:
        ns = namespace_of(bundle)
        base = self.namespace_policy_candidates(bundle, load, state)
        cands = self._filter_topic_count(base, load, config)
        counts = self.anti_affinity_counts(ns, load, state)
        cands = aa.filter_candidates(cands, counts, state.broker_domain, config.get_bool("failureDomainsEnabled"))
        if config.get_bool("loadBalancerDistributeBundlesEvenlyEnabled") or ns == SYSTEM_NAMESPACE:
            cands = remove_most_servicing_brokers(ns, cands, self.ranges(load))
        cands = class_filter(cands, load, config)
        try:
            cands = version_filter(cands, load, config)
        except ValueError:  # the brokers the policies allow, added back to what the class filter kept
            cands = self._refill(cands, base)
        if not cands:
            cands = self._refill(cands, base)
        pick = self._strategy_select(cands, bundle, load, config)
        if pick is None:
            return None
        if pick not in load.brokers:
            # an isolation policy's broker the leader has no load data of: Pulsar reads its report for the overload
            # check below and the lookup fails (a NullPointerException), the bundle stays unassigned this time
            raise LookupFailed(pick)
        thr = config.get_int("loadBalancerBrokerOverloadedThresholdPercentage") / 100.0
        frame = load.frame(config)
        if frame.weighted_max(weights_of(config))[frame.index[pick]] > thr:
            again = self._strategy_select(self._refill(cands, base), bundle, load, config)
            pick = again or pick
        return pick

    def _refill(self, kept: list[str], base: list[str]) -> list[str]:
        """``applyNamespacePolicies`` again into ``brokerCandidateCache`` without clearing it: what the filters kept
        stays where it was in the set, the brokers they removed come back after it in their buckets (the order
        round robin and the strategies' ties walk)."""
        held = set(kept)
        return self.candidate_set.order([*kept, *(b for b in base if b not in held)])

    def assign(self, bundle: str, load: LoadData, config: PulsarConfig, state: ClusterState) -> str | None:
        if bundle in self.preallocated_to:
            return self.preallocated_to[bundle]
        try:
            broker = self.select(bundle, load, config, state)
        except LookupFailed:
            return None
        if broker is not None and broker not in load.brokers:
            return None  # preallocateBundle reads the broker's load data: Pulsar's lookup fails, nothing is placed
        if broker is not None:
            self.preallocated.setdefault(broker, {})[bundle] = load.bundle_data.get(bundle) or default_bundle_data()
            self.preallocated_to[bundle] = broker
            ns, rng = bundle.rsplit("/", 1)
            self.ranges(load)[broker][ns].add(rng)
        return broker

    def _strategy_select(self, cands: list[str], bundle: str, load: LoadData, config: PulsarConfig) -> str | None:
        if getattr(self.strategy, "reads_broker_data", False):  # every candidate's, as Pulsar's strategy does
            missing = next((b for b in cands if b not in load.brokers), None)
            if missing is not None:
                raise LookupFailed(missing)
        if isinstance(self.strategy, AvgShedder):
            return self.strategy.select_broker(cands, bundle, load, config)
        return self.strategy.select(cands, load, config, bundle, self.preallocated)

    def _filter_topic_count(self, cands: list[str], load: LoadData, config: PulsarConfig) -> list[str]:
        limit = config.get_int("loadBalancerBrokerMaxTopics")

        def topics(b):
            report = load.brokers.get(b)
            if report is None:
                return 0
            held = self.preallocated.get(b)
            pre = sum(int((d or {}).get("topics", 0) or 0) for d in held.values()) if held else 0
            return pre + int(report.get("numTopics", 0) or 0)

        kept = [b for b in cands if topics(b) <= limit]
        return kept or cands


def remove_most_servicing_brokers(namespace: str, candidates: list[str], ranges: dict) -> list[str]:
    """``LoadManagerShared.removeMostServicingBrokersForNamespace``: keep the candidates holding the fewest
    bundle ranges of the namespace (``ranges``: broker → namespace → ranges)."""
    held = [len(r.get(namespace, ())) if (r := ranges.get(b)) else 0 for b in candidates]
    least = min(held, default=0)
    return [b for b, n in zip(candidates, held) if n <= least]


def default_bundle_data() -> dict:
    """``new BundleData(10, 1000, defaultStats)``: what the leader assumes for a bundle it knows nothing of."""
    return {"shortTermData": {"maxSamples": 10, **_DEFAULT_AVG}, "longTermData": {"maxSamples": 1000, **_DEFAULT_AVG},
            "topics": 0}


def broker_filters(cands: list[str], load: LoadData, config: PulsarConfig) -> list[str]:
    """The modular leader's filter pipeline: ``BrokerLoadManagerClassFilter``, then ``BrokerVersionFilter``. Raises
    ValueError as the version filter's ``BrokerFilterBadVersionException`` does."""
    return version_filter(class_filter(cands, load, config), load, config)


def class_filter(cands: list[str], load: LoadData, config: PulsarConfig) -> list[str]:
    """``BrokerLoadManagerClassFilter``: removes every broker of the ``LoadData`` whose report names another class
    than the configured one, a report without a class name included (``Objects.equals(null, name)`` is false: a
    broker older than the field, whose report Jackson wrote without it, during a rolling upgrade); a candidate the
    ``LoadData`` does not hold stays (4.0.7 and 4.0.8 alike)."""
    wanted = config["loadManagerClassName"]
    return [b for b in cands if b not in load.brokers or (load.brokers[b] or {}).get("loadManagerClassName") == wanted]


def version_filter(cands: list[str], load: LoadData, config: PulsarConfig) -> list[str]:
    """``BrokerVersionFilter`` with ``preferLaterVersions``: only the newest version stays. Raises ValueError as its
    ``BrokerFilterBadVersionException`` does; the caller then falls back to the policies' brokers."""
    if not config.get_bool("preferLaterVersions"):
        return cands
    if not cands:
        raise ValueError("Unable to determine latest version since broker set was empty")
    versions = {b: semver((load.brokers.get(b) or {}).get("brokerVersionString")) for b in cands}
    latest = max(versions.values())
    return [b for b in cands if versions[b][:4] == latest[:4]]


_SEMVER = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+([0-9A-Za-z.-]+))?")


def semver(text: str | None) -> tuple:
    """A comparable key for a semantic version (pre-releases before the release, as semver orders them)."""
    m = _SEMVER.fullmatch(text or "")
    if m is None:
        raise ValueError(f"invalid version string {text!r}")
    pre = m.group(4)
    pre_key = (1,) if pre is None else (0, *((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")))
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), pre_key, m.group(5) or ""
