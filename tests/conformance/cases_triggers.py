"""Random inputs for the modular split trigger's conformance (``BundleSplitterTask.findBundlesToSplit``), in the
JSON of ``tests/conformance/java/SplitTriggers.java``: the brokers' ``LocalBrokerData`` (their ``lastStats``), the
leader's ``BundleData`` and each namespace's bundle count.

Deterministic per case id. Inputs lean on the edges: values on the limits (the task compares with ``>``), one or
two topics, a session limit of 0 or less (off), sessions past Java's ``int`` when added, bandwidth limits whose
``Mbytes × 1048576`` overflows Java's ``int`` (2048 and more), bundles without ``BundleData``, namespaces at and
near ``loadBalancerNamespaceMaximumBundles`` with several hot bundles competing for the last slots.
"""

from __future__ import annotations

import random

from lb_pipeline.model.bundles import parse_range, split_bundle_name, topic_hash

MIB = 1024 * 1024


def _limits(rnd: random.Random) -> dict:
    return {"loadBalancerNamespaceBundleMaxTopics": rnd.choice((1, 2, 5, 1000)),
            "loadBalancerNamespaceBundleMaxSessions": rnd.choice((-1, 0, 1, 10, 1000)),
            "loadBalancerNamespaceBundleMaxMsgRate": rnd.choice((0, 100, 30000)),
            "loadBalancerNamespaceBundleMaxBandwidthMbytes": rnd.choice((0, 1, 100, 2047, 2048, 3000, 4096, 100000)),
            "loadBalancerNamespaceMaximumBundles": rnd.choice((1, 2, 4, 128))}


def _edge(rnd: random.Random, limit: float, scale: float) -> float:
    """A value on, just past or far from a limit (or anywhere, or zero)."""
    return rnd.choice((0.0, float(limit), float(limit) + 0.5, max(0.0, float(limit) - 0.5),
                       round(rnd.paretovariate(1.2) * scale, 3)))


def trigger_case(i: int) -> dict:
    rnd = random.Random(f"triggers-{i}")
    limits = _limits(rnd)
    namespaces = [f"tenant/ns-{k}" for k in range(rnd.choice((1, 2, 3)))]
    brokers, bundle_data, used = {}, {}, set()
    for b in range(rnd.choice((1, 2, 3, 5))):
        stats = {}
        for _ in range(rnd.choice((0, 1, 3, 6))):
            ns, lower = rnd.choice(namespaces), rnd.randrange(0, 0xFFFF0000, 0x10000)
            bundle = f"{ns}/0x{lower:08x}_0x{lower + 0x10000:08x}"
            if bundle in used:
                continue
            used.add(bundle)
            big = rnd.random() < 0.05  # added, the two counts pass Java's int
            producers = 2**31 - rnd.choice((1, 2)) if big else rnd.choice((0, 1, 5, limits[
                "loadBalancerNamespaceBundleMaxSessions"] if limits["loadBalancerNamespaceBundleMaxSessions"] > 0 else 3))
            stats[bundle] = {"topics": rnd.choice((0, 1, 2, 3, limits["loadBalancerNamespaceBundleMaxTopics"],
                                                   limits["loadBalancerNamespaceBundleMaxTopics"] + 1, 50)),
                             "producerCount": producers, "consumerCount": rnd.choice((0, 1, 2, 7)),
                             "msgRateIn": round(rnd.uniform(0, 500), 3), "msgThroughputIn": round(rnd.uniform(0, 1e6), 1)}
            if rnd.random() < 0.8:  # else no BundleData: the task counts rate and bandwidth as 0
                rate, mbytes = limits["loadBalancerNamespaceBundleMaxMsgRate"], limits["loadBalancerNamespaceBundleMaxBandwidthMbytes"]
                total_rate, total_bytes = _edge(rnd, rate, 500), _edge(rnd, min(mbytes * MIB, 2**40), 2e6)
                share = rnd.random()
                bundle_data[bundle] = {"longTermData": {
                    "maxSamples": 1000, "numSamples": rnd.choice((1, 500, 1000)),
                    "msgRateIn": total_rate * share, "msgRateOut": total_rate * (1 - share),
                    "msgThroughputIn": total_bytes * share, "msgThroughputOut": total_bytes * (1 - share)}}
        brokers[f"broker-{b}.example.com:8080"] = {"lastStats": stats}
    counts = {ns: rnd.choice((1, limits["loadBalancerNamespaceMaximumBundles"] - 1,
                              limits["loadBalancerNamespaceMaximumBundles"], 16)) for ns in namespaces}
    return {"name": f"conformance-triggers-{i:04d}", "config": {k: str(v) for k, v in limits.items()},
            "brokers": brokers, "bundleData": bundle_data, "bundleCounts": counts, "cycles": 1}


NAMESPACES = ("tenant/ns", "tenant/ns-eu", "tenant/ns-2")  # "tenant/ns-eu" starts with "tenant/ns": a neighbour
RANGES = ("0x00000000_0x40000000", "0x40000000_0x80000000", "0x80000000_0xc0000000", "0xc0000000_0xffffffff",
          "0x10000000_0x10000001", "0x10000000_0x10000002", "0x40000000_0x60000000", "0x20000000_0x40000000")
ALGORITHMS = ("range_equally_divide", "topic_count_equally_divide", "specified_positions_divide", "no_such_algorithm")


def _topics_inside(rnd: random.Random, bundle: str, n: int) -> list[str]:
    """``n`` topic names of the bundle's namespace whose hashes fall inside its range (fewer for a narrow one)."""
    namespace, rng = split_bundle_name(bundle)
    lower, upper = parse_range(rng)
    names = (f"persistent://{namespace}/t-{rnd.randrange(10**6)}" for _ in range(60 * n))
    return [t for t in names if lower <= topic_hash(t) < upper][:n]


def extensible_trigger_case(i: int) -> dict:
    """``DefaultNamespaceBundleSplitStrategyImpl`` on one owner broker over one to four cycles (its hit counts carry
    over): namespaces whose names are prefixes of each other, bundles too narrow to split, neighbours splitting, a
    bundle count that cannot be read, the per-cycle cap, each automatic split algorithm and names Pulsar does not know."""
    rnd = random.Random(f"extensible-triggers-{i}")
    config = {**_limits(rnd),
              "loadBalancerNamespaceBundleSplitConditionHitCountThreshold": rnd.choice((0, 0, 1, 2)),
              "loadBalancerMaxNumberOfBundlesToSplitPerCycle": rnd.choice((0, 1, 2, 10)),
              "defaultNamespaceBundleSplitAlgorithm": rnd.choice(ALGORITHMS),
              "loadBalancerAutoBundleSplitEnabled": rnd.random() > 0.05, "loadBalancerEnabled": rnd.random() > 0.05}
    pool = sorted({f"{rnd.choice(NAMESPACES)}/{rnd.choice(RANGES)}" for _ in range(rnd.choice((1, 3, 6, 10)))})
    topics = {b: _topics_inside(rnd, b, rnd.choice((0, 1, 2, 5))) for b in pool}
    heat = {b: rnd.random() for b in pool}  # a hot bundle tends to stay hot, for the hit counts
    cycles = []
    for _ in range(rnd.choice((1, 2, 3, 4))):
        stats = {}
        for b in pool:
            if rnd.random() < 0.15:
                continue  # gone from the broker's stats this cycle: its hit count is dropped
            hot = rnd.random() < heat[b]
            big = rnd.random() < 0.03  # added, the two counts pass Java's int
            rate = config["loadBalancerNamespaceBundleMaxMsgRate"]
            mbytes = config["loadBalancerNamespaceBundleMaxBandwidthMbytes"]
            share = rnd.random()
            total_rate = _edge(rnd, rate, 500) * (2 if hot else 0.5)
            total_bytes = _edge(rnd, min(mbytes * MIB, 2**40), 2e6) * (2 if hot else 0.5)
            stats[b] = {"topics": rnd.choice((0, 1, 2, 3, config["loadBalancerNamespaceBundleMaxTopics"],
                                              config["loadBalancerNamespaceBundleMaxTopics"] + 1, 50)),
                        "producerCount": 2**31 - 1 if big else rnd.choice((0, 1, 5, 1001)),
                        "consumerCount": rnd.choice((0, 1, 2, 7)),
                        "msgRateIn": total_rate * share, "msgRateOut": total_rate * (1 - share),
                        "msgThroughputIn": total_bytes * share, "msgThroughputOut": total_bytes * (1 - share)}
        maximum = config["loadBalancerNamespaceMaximumBundles"]
        counts = {ns: rnd.choice((1, maximum - 1, maximum, 16)) for ns in NAMESPACES if rnd.random() > 0.05}
        splitting = sorted({f"{rnd.choice(NAMESPACES)}/{rnd.choice(RANGES)}" for _ in range(rnd.choice((0, 0, 1, 2)))})
        cycles.append({"stats": stats, "splitting": splitting, "bundleCounts": counts})
    return {"name": f"conformance-extensible-triggers-{i:04d}", "config": {k: str(v).lower() if isinstance(v, bool)
                                                                          else str(v) for k, v in config.items()},
            "broker": f"broker-{i % 3}.example.com:8080", "topics": topics, "cycles": cycles}
