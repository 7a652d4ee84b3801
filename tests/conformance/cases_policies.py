"""Random clusters with namespace isolation policies, anti-affinity groups and failure domains, for Pulsar's policy
paths of broker selection (``tests/conformance/java/Policies.java``): which brokers a bundle may go to under the
isolation policies, which of them the anti-affinity filter keeps (counted as the modular and as the extensible
leader count), whether the anti-affinity check lets a bundle be unloaded, which brokers the modular leader's
large-topic, load-manager class and version filters keep, and where its whole ``selectBrokerForAssignment`` puts a
sequence of bundles (with the round-robin placement strategy, whose picks are deterministic). Some bundles come as
a lookup of a non-persistent topic hands them over (``hasNonPersistentTopic``), which only brokers serving
non-persistent topics may take.

Group names include what Java compares unlike Python (``equalsIgnoreCase`` on ``ı``/``I``, ``ß``; blank and not
blank under ``isBlank``: an em space is whitespace to Java, a no-break space is not); policy regexes match host
names whole, as ``String.matches`` does; two policies may claim one namespace (the first in ``HashMap`` order wins).
"""

from __future__ import annotations

import random
import re

from tests.conformance.cases import broker_names

NAMESPACES = ("t/a", "t/b", "t/c", "t/d", "iso/x", "iso/y")
GROUPS = ("g1", "G1", "g2", "gı", "GI", "straße", "STRASSE", " g1 ", "", "   ", "\u2003", "\u00a0", "\u00a0g2")
EXTENSIBLE = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
MODULAR = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
ROUND_ROBIN = "org.apache.pulsar.broker.loadbalance.impl.RoundRobinBrokerSelector"  # deterministic: picks compare
NS_PATTERNS = ("t/[ab]", "t/a.*", "iso/.*", "t/(a|c)", "iso/x", "t/.", ".*")
STATS = ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut")  # NamespaceBundleStats / time averages


def _host(broker: str) -> str:
    return broker[:broker.rindex(":")]


def _host_patterns(rnd: random.Random, hosts: list[str]) -> list[str]:
    picked = rnd.sample(hosts, k=rnd.randint(0, min(3, len(hosts))))
    out = [re.escape(h) for h in picked]
    if rnd.random() < 0.4:
        h = rnd.choice(hosts)
        out.append(re.escape(h[:max(1, len(h) - 2)]) + ".*")  # a prefix
    if rnd.random() < 0.2:
        out.append(".*")
    return out


def policies_case(i: int) -> dict:
    rnd = random.Random(f"policies-{i}")
    pool = broker_names(rnd, rnd.randint(2, 8))
    hosts = sorted({_host(b) for b in pool})
    lookup = {b: {"persistentTopicsEnabled": rnd.random() > 0.1, "nonPersistentTopicsEnabled": rnd.random() > 0.3,
                  "loadManagerClassName": rnd.choice((MODULAR,) * 6 + (EXTENSIBLE, None)),
                  "brokerVersionString": rnd.choice(("4.0.8", "4.0.8", "4.0.7", "4.1.0-SNAPSHOT", "4.0.8+build.1")),
                  "numTopics": rnd.choice((0, 10, 100, 1000)),
                  "cpu": {"usage": rnd.choice((10.0, 50.0, 90.0, round(rnd.uniform(0, 100), 1))), "limit": 100.0}}
              for b in pool if rnd.random() > 0.05}  # a broker without load data now and then
    available = [b for b in pool if rnd.random() > 0.15] or pool[:1]
    rnd.shuffle(available)
    isolation = {}
    for k in range(rnd.choice((0, 0, 1, 1, 2, 3))):
        isolation[f"policy-{rnd.randrange(1000)}-{k}"] = {
            "namespaces": rnd.sample(NS_PATTERNS, k=rnd.randint(1, 2)),
            "primary": _host_patterns(rnd, hosts), "secondary": _host_patterns(rnd, hosts),
            "auto_failover_policy": {"policy_type": "min_available",
                                     "parameters": {"min_limit": str(rnd.randint(0, 3)), "usage_threshold": "80"}}}
    groups = {ns: rnd.choice(GROUPS) for ns in NAMESPACES if rnd.random() < 0.7}
    domains: dict[str, list[str]] = {}
    if rnd.random() < 0.7:
        for b in pool:
            if rnd.random() < 0.8:
                domains.setdefault(f"zone-{rnd.randint(1, 3)}", []).append(b)
    ownership = {}
    for _ in range(rnd.randint(0, 14)):
        ns = rnd.choice(NAMESPACES)
        lo = rnd.randrange(16) << 28
        ownership[f"{ns}/0x{lo:08x}_0x{lo + (1 << 28) - 1:08x}"] = rnd.choice(pool)
    queries = [{"bundle": f"{rnd.choice(NAMESPACES)}/0x00000000_0xffffffff", "current": rnd.choice(pool)}
               for _ in range(3)]
    # bundles the modular leader assigns one after the other (selectBrokerForAssignment, preallocations carried)
    assign = []
    for _ in range(rnd.randint(1, 6)):
        lo = rnd.randrange(1 << 20) << 12
        assign.append(f"{rnd.choice(NAMESPACES)}/0x{lo:08x}_0x{lo + 4095:08x}")
    # bundles a client looked up through a non-persistent topic (the leader's NamespaceBundle flagged
    # hasNonPersistentTopic): placed only on brokers that serve non-persistent topics
    non_persistent = sorted({q["bundle"] for q in queries if rnd.random() < 0.4} | {b for b in assign if rnd.random() < 0.4})
    # bundles the leader starts averaging (getBundleDataOrDefault): stored BundleData, a ResourceQuota, both, neither
    seeds = []
    for k in range(rnd.randint(1, 3)):
        lo = (rnd.randrange(1 << 20) << 12) | 1  # odd: never one of the bundles above
        seed = {"bundle": f"{rnd.choice(NAMESPACES)}/0x{lo:08x}_0x{lo + 4094:08x}",
                "sample": {f: round(rnd.uniform(0, 5000), 3) for f in STATS}}
        if rnd.random() < 0.3:
            seed["stored"] = {w: {"maxSamples": m, "numSamples": rnd.randint(0, m), **{f: round(rnd.uniform(0, 9000), 3)
                                                                                      for f in STATS}}
                              for w, m in (("shortTermData", 10), ("longTermData", 1000))}
        if rnd.random() < 0.6:
            seed["quota"] = {"msgRateIn": round(rnd.uniform(0, 900), 3), "msgRateOut": round(rnd.uniform(0, 900), 3),
                             "bandwidthIn": round(rnd.uniform(0, 9e5), 1), "bandwidthOut": round(rnd.uniform(0, 9e5), 1),
                             "memory": 64.0, "dynamic": rnd.random() < 0.5}
        seeds.append(seed)
    return {"name": f"conformance-policies-{i:04d}",
            "config": {"clusterName": "lbtest", "failureDomainsEnabled": str(rnd.random() < 0.6).lower(),
                       "preferLaterVersions": str(rnd.random() < 0.4).lower(),
                       "loadBalancerBrokerMaxTopics": rnd.choice(("50000", "500", "50", "5")),
                       "loadBalancerLoadPlacementStrategy": ROUND_ROBIN,
                       "loadBalancerDistributeBundlesEvenlyEnabled": str(rnd.random() < 0.5).lower(),
                       "loadBalancerBrokerOverloadedThresholdPercentage": rnd.choice(("85", "40"))},
            "available": available, "lookup": lookup, "isolation": isolation, "groups": groups, "domains": domains,
            "ownership": ownership, "queries": queries, "assign": assign, "non_persistent": non_persistent,
            "seeds": seeds}



def transfer_policies_case(i: int) -> dict:
    """TransferShedder on the extensible leader, with the broker filter pipeline ``isTransferable`` runs
    (``tests/conformance/java/Policies.java``, family transfer-policies): the oracle's transfer case, plus the cluster's policies and
    each broker's lookup data (its load-manager class, version, the topics it serves)."""
    from tests.conformance.cases_extensible import _store, _transfer_config

    rnd = random.Random(f"transfer-policies-{i}")
    now_ms = 1_700_000_000_000
    pool = broker_names(rnd, rnd.choice((2, 3, 4, 6, 10)))
    hosts = sorted({_host(b) for b in pool})
    data, tops = _store(rnd, pool, now_ms, rnd.random() < 0.3)
    for d in data.values():
        d["topics"] = rnd.choice((0, 10, 100, 1000))
    config = {**_transfer_config(rnd), "loadBalancerSheddingConditionHitCountThreshold": rnd.choice((0, 0, 1)),
              "clusterName": "lbtest", "loadManagerClassName": EXTENSIBLE,
              "failureDomainsEnabled": rnd.random() < 0.5, "preferLaterVersions": rnd.random() < 0.25,
              "loadBalancerBrokerMaxTopics": rnd.choice((50000, 50000, 500, 50)),
              "loadBalancerSheddingBundlesWithPoliciesEnabled": rnd.random() < 0.7}
    namespaces = ("tenant/ns-0", "tenant/ns-1", "tenant/ns-2")
    isolation = {}
    for k in range(rnd.choice((0, 1, 1, 2))):
        isolation[f"policy-{rnd.randrange(1000)}-{k}"] = {
            "namespaces": rnd.sample(("tenant/ns-[01]", "tenant/ns-0", "tenant/ns-2", "tenant/.*"), k=1),
            "primary": _host_patterns(rnd, hosts), "secondary": _host_patterns(rnd, hosts),
            "auto_failover_policy": {"policy_type": "min_available",
                                     "parameters": {"min_limit": str(rnd.randint(0, 2)), "usage_threshold": "80"}}}
    groups = {ns: rnd.choice(("g", "G", "h", " ", "\u00a0")) for ns in namespaces if rnd.random() < 0.6}
    domains: dict[str, list[str]] = {}
    for b in pool:
        if rnd.random() < 0.7:
            domains.setdefault(f"zone-{rnd.randint(1, 2)}", []).append(b)
    owned = {t["bundle"]: b for b in pool for t in tops[b]}
    for _ in range(rnd.randint(0, 6)):  # bundles of the groups' namespaces beyond the top-k lists
        lo = rnd.randrange(1 << 24) << 8
        owned[f"{rnd.choice(namespaces)}/0x{lo:08x}_0x{lo + 255:08x}"] = rnd.choice(pool)
    version = {b: rnd.choice(("4.0.8", "4.0.8", "4.0.7", "4.1.0-SNAPSHOT")) for b in pool}
    lookup = {b: {"loadManagerClassName": rnd.choice((EXTENSIBLE,) * 8 + (MODULAR, None)),
                  "brokerVersion": version[b], "persistentTopicsEnabled": rnd.random() > 0.1,
                  "nonPersistentTopicsEnabled": rnd.random() > 0.3} for b in pool}
    calls = []
    for _ in range(rnd.choice((1, 2, 3))):
        call = {"recently_unloaded_bundles": {t["bundle"]: now_ms - 1000 for b in pool for t in tops[b]
                                              if rnd.random() < 0.05},
                "recently_unloaded_brokers": {b: now_ms - 1_000_000 for b in pool if rnd.random() < 0.1}}
        if rnd.random() < 0.2:
            call["overrides"] = {"ownership": {"check_enabled": True, "not_owned": [
                t["bundle"] for b in pool for t in tops[b] if rnd.random() < 0.2]}}
        calls.append(call)
    assign = [f"{rnd.choice(namespaces)}/0x{(lo := rnd.randrange(1 << 20) << 12):08x}_0x{lo + 4095:08x}"
              for _ in range(rnd.randint(1, 4))]  # bundles the extensible leader assigns (selectAsync)
    non_persistent = sorted({b for b in assign if rnd.random() < 0.4})  # looked up through a non-persistent topic
    return {"name": f"conformance-transfer-policies-{i:04d}", "kind": "transfer_shedder", "now_ms": now_ms,
            "config": config, "brokers": data, "broker_order": pool, "top_bundles": tops,
            "available_brokers": [b for b in pool if rnd.random() < 0.95],
            "policies": {"isolation": isolation, "groups": groups, "domains": domains, "owned": owned,
                         "lookup": lookup}, "calls": calls, "assign": assign, "non_persistent": non_persistent}
