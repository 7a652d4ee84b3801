"""Random clusters with namespace isolation policies, anti-affinity groups and failure domains, for Pulsar's policy
paths of broker selection (``tests/conformance/java/Policies.java``): which brokers a bundle may go to under the
isolation policies, which of them the anti-affinity filter keeps (counted as the modular and as the extensible
leader count), and whether the anti-affinity check lets a bundle be unloaded.

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
NS_PATTERNS = ("t/[ab]", "t/a.*", "iso/.*", "t/(a|c)", "iso/x", "t/.", ".*")


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
    lookup = {b: {"persistentTopicsEnabled": rnd.random() > 0.1, "nonPersistentTopicsEnabled": rnd.random() > 0.3}
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
    return {"name": f"conformance-policies-{i:04d}",
            "config": {"clusterName": "lbtest", "failureDomainsEnabled": str(rnd.random() < 0.6).lower()},
            "available": available, "lookup": lookup, "isolation": isolation, "groups": groups, "domains": domains,
            "ownership": ownership, "queries": queries}
