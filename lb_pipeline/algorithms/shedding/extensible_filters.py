"""The extensible load manager's broker filter pipeline, as ``TransferShedder.isTransferable`` runs it on the
available brokers for each bundle it considers moving (``ExtensibleLoadManagerImpl``: the constructor's three
filters, then the two ``start()`` adds):

1. ``BrokerLoadManagerClassFilter``: a broker whose lookup data names another load-manager class than the
   configured one (none included: a broker older than the field) is no destination;
2. ``BrokerMaxTopicCountFilter``: nor one whose ``BrokerLoadData`` counts ``loadBalancerBrokerMaxTopics`` topics or
   more (a broker without load data counts 0);
3. ``BrokerVersionFilter``: with ``preferLaterVersions``, only the brokers of the newest version stay;
4. ``AntiAffinityGroupPolicyFilter``: the brokers (failure domains first, when enabled) holding the fewest
   bundles of the bundle's anti-affinity group, counted over the service-unit channel's owned bundles;
5. ``BrokerIsolationPoliciesFilter``: the brokers the namespace isolation policies allow the bundle on
   (``applyNamespacePoliciesAsync`` with each broker's lookup data saying whether it serves persistent topics).

Without lookup data (a what-if of a modular cluster on the extensible load manager) every broker is taken to run
the configured class and version. ``tests/test_conformance_policies.py`` holds it to Pulsar's own classes.
"""

from __future__ import annotations

from types import SimpleNamespace

from lb_pipeline.algorithms import anti_affinity as aa
from lb_pipeline.algorithms.shedding.frame import namespace_of
from lb_pipeline.algorithms.shedding.placement import ExtensibleLeastResourceUsageWithWeight
from lb_pipeline.algorithms.shedding.isolation import allowed_brokers
from lb_pipeline.algorithms.shedding.selection import ClusterState, semver
from lb_pipeline.algorithms.shedding.transfer_inputs import ExtensibleLoad
from lb_pipeline.model.config import PulsarConfig

SERVES = ("persistentTopicsEnabled", "nonPersistentTopicsEnabled")  # what a broker's lookup data says it serves


class FilterFailed(Exception):
    """A filter's future failed (a version that does not parse): ``isTransferable`` answers false."""


def candidates(load, config: PulsarConfig, bundle: str, bad_version: str = "raise") -> set[str]:
    """The available brokers of ``load`` (an ``ExtensibleLoad``) the pipeline keeps for ``bundle``. A version that
    does not parse fails the version filter: ``isTransferable`` then answers false (``bad_version="raise"``:
    :class:`FilterFailed`), while ``selectAsync`` logs it and goes on with what the other filters kept
    (``"skip"``)."""
    kept = list(load.available)
    lookup = load.lookup
    if lookup is not None and kept:
        wanted = config["loadManagerClassName"]
        kept = [b for b in kept if (lookup.get(b) or {}).get("loadManagerClassName") == wanted]
    limit = config.get_int("loadBalancerBrokerMaxTopics")
    kept = [b for b in kept if int((load.brokers.get(b) or {}).get("topics", 0) or 0) < limit]
    if lookup is not None and kept and config.get_bool("preferLaterVersions"):
        try:
            versions = {b: semver((lookup.get(b) or {}).get("brokerVersion")) for b in kept}
        except ValueError as exc:
            if bad_version == "raise":
                raise FilterFailed(str(exc)) from None
            versions = None
        if versions is not None:
            latest = max(v[:4] for v in versions.values())
            kept = [b for b in kept if versions[b][:4] == latest]
    ns = namespace_of(bundle)
    if kept:
        counts = aa.owned_counts_extensible(ns, load.owned if load.owned is not None else load.owners, load.groups)
        kept = aa.filter_candidates(kept, counts, load.broker_domain, config.get_bool("failureDomainsEnabled"))
    policy = next((p for p in load.isolation if p.matches(ns)), None)
    serving = SimpleNamespace(brokers={b: {k: (lookup or {}).get(b, {}).get(k, True) for k in SERVES} for b in kept})
    return set(allowed_brokers(policy, serving, ClusterState(kept, load.isolation), bundle in load.non_persistent))


class ExtensiblePlacement:
    """``ExtensibleLoadManagerImpl.selectAsync``: the available brokers through the pipeline above, then the
    extensible ``LeastResourceUsageWithWeight`` on the ``weightedMaxEMA`` the load data store holds (``store()``:
    broker → ``BrokerLoadData``, what each broker last wrote). Unlike the modular leader it preallocates nothing:
    bundles placed in one moment all see the same store. The anti-affinity filter counts the bundles the brokers'
    load reports list (the service-unit channel's owners)."""

    def __init__(self, store, rng, lookup: dict[str, dict] | None = None, owned: dict[str, str] | None = None):
        self.store, self.strategy = store, ExtensibleLeastResourceUsageWithWeight(rng=rng)
        self.lookup, self.owned = lookup, owned  # each broker's lookup data; the channel's owners (None: the reports')

    def new_cycle(self) -> None:
        """Nothing carried from one cycle's placements to the next's."""

    def best(self, bundle: str, load, config: PulsarConfig, state: ClusterState) -> list[str]:
        """The brokers the strategy picks among at random (none: no broker passes the filters)."""
        stored = self.store()
        owned = self.owned if self.owned is not None else {
            b: broker for broker, r in load.brokers.items() for b in (r.get("bundles") or ())}
        ext = ExtensibleLoad(stored, {}, list(state.available), lookup=self.lookup, isolation=state.isolation,
                             groups=state.groups, broker_domain=state.broker_domain, owned=owned,
                             non_persistent=state.non_persistent)
        kept = candidates(ext, config, bundle, bad_version="skip")
        if not kept:
            return []
        ema = {b: float(d.get("weightedMaxEMA", 0.0)) for b, d in stored.items()}
        return self.strategy.best([b for b in state.available if b in kept], ema, config)

    def select(self, bundle: str, load, config: PulsarConfig, state: ClusterState) -> str | None:
        best = self.best(bundle, load, config, state)
        return self.strategy.rng.choice(best) if best else None

    assign = select
