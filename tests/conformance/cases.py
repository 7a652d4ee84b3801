"""Random inputs for the conformance suite, in the JSON the Pulsar oracle reads (../shared/tools/pulsar-oracle).

Deterministic per case id (``random.Random(id)``), so the test regenerates the inputs and only Pulsar's answers
are stored (``data/*.jsonl.gz``, written by ``make conformance``). Inputs lean on what makes implementations
disagree: ties (quantized values, equal brokers, zero-traffic bundles), hash-order effects (many keys, system
and heartbeat namespaces, bundles with no owner), more than 32 brokers (TimSort's merges), several cycles with
brokers joining and leaving (state carried), recently unloaded bundles and random configurations.
"""

from __future__ import annotations

import random

STRATEGIES = ("OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder")
COUNTS = {"shedders": 1200, "placement": 240, "transfer": 360, "splits": 600, "hashing": 50, "triggers": 600,
          "extensible-triggers": 600, "policies": 600,
          "transfer-policies": 600}


def broker_names(rnd: random.Random, n: int) -> list[str]:
    style = rnd.randrange(3)
    if style == 0:
        return [f"broker-{i}:8080" for i in range(n)]
    if style == 1:
        return [f"10.0.{i // 200}.{i % 200 + 1}:{rnd.choice((6650, 8080))}" for i in range(n)]
    return [f"pulsar-broker-{i}.pulsar-broker.pulsar.svc.cluster.local:8080" for i in range(n)]


class Namer:
    """Unique bundle names over a pool of namespaces, system and heartbeat ones included."""

    def __init__(self, rnd: random.Random, brokers: list[str]):
        self.rnd, self.next = rnd, 0
        self.pool = [f"tenant-{t}/ns-{n}" for t in range(3) for n in range(4)]
        if rnd.random() < 0.5:
            b = rnd.choice(brokers)
            self.pool += ["pulsar/system", f"pulsar/standalone/{b}", f"pulsar/{b}", f"sla-monitor/standalone/{b}"]

    def __call__(self) -> str:
        self.next += 1
        lo = self.next * 0x10000
        return f"{self.rnd.choice(self.pool)}/0x{lo:08x}_0x{lo + 0x10000:08x}"


def _value(rnd: random.Random, quantized: bool, scale: float) -> float:
    if quantized:
        return rnd.choice((0.0, 1.0, 10.0, 100.0)) * scale
    return round(rnd.paretovariate(1.2) * scale, 3)


def _usage(rnd: random.Random, equal: bool, hi: float = 130.0) -> dict:
    if equal:
        return {"usage": 50.0, "limit": 100.0}
    limit = rnd.choice((0.0, 100.0, 400.0, 800.0, 1600.0)) if rnd.random() < 0.1 else rnd.choice((100.0, 400.0, 1600.0))
    return {"usage": round(limit * rnd.uniform(0, hi) / 100, 3), "limit": limit}


def _config(rnd: random.Random, strategy: str) -> dict:
    c: dict = {}
    if rnd.random() < 0.6:
        c["loadBalancerBrokerOverloadedThresholdPercentage"] = rnd.choice((30, 50, 70, 85, 95))
    for key in ("loadBalancerCPUResourceWeight", "loadBalancerDirectMemoryResourceWeight",
                "loadBalancerBandwidthInResourceWeight", "loadBalancerBandwidthOutResourceWeight"):
        if rnd.random() < 0.25:
            c[key] = rnd.choice((0.0, 0.5, 1.0, 2.0))
    if strategy == "ThresholdShedder":
        c.update(loadBalancerBrokerThresholdShedderPercentage=rnd.choice((0, 5, 10, 20)),
                 loadBalancerHistoryResourcePercentage=rnd.choice((0.0, 0.5, 0.9, 1.0)),
                 loadBalancerBundleUnloadMinThroughputThreshold=rnd.choice((0.0, 0.001, 1.0, 10.0)),
                 lowerBoundarySheddingEnabled=rnd.random() < 0.4)
    if strategy in ("UniformLoadShedder", "AvgShedder"):
        c.update(maxUnloadPercentage=rnd.choice((0.1, 0.2, 0.5, 1.0)), minUnloadMessage=rnd.choice((0, 10, 100, 1000)),
                 minUnloadMessageThroughput=rnd.choice((0, 1024, 1048576)))
    if strategy == "UniformLoadShedder":
        c.update(loadBalancerMsgRateDifferenceShedderThreshold=rnd.choice((0.0, 10.0, 50.0, 200.0)),
                 loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold=rnd.choice((0.0, 1.5, 4.0)),
                 maxUnloadBundleNumPerShedding=rnd.choice((-1, -1, 1, 3)))
    if strategy == "AvgShedder":
        c.update(loadBalancerAvgShedderLowThreshold=rnd.choice((0, 5, 15)),
                 loadBalancerAvgShedderHighThreshold=rnd.choice((10, 20, 40)),
                 loadBalancerAvgShedderHitCountLowThreshold=rnd.choice((1, 2, 3, 8)),
                 loadBalancerAvgShedderHitCountHighThreshold=rnd.choice((1, 2)))
    return c


def _cycle(rnd: random.Random, brokers: list[str], names: Namer, owned: dict[str, list[str]], now_ms: int,
           quantized: bool, equal: bool) -> dict:
    reports, bundle_data = {}, {}
    for b in brokers:
        kept = [x for x in owned.get(b, []) if rnd.random() < 0.85]
        while len(kept) < rnd.choice((0, 1, 2, 3, 8, 20, 40)) and len(kept) < 60:
            kept.append(names())
        owned[b] = kept
        tot = [0.0, 0.0, 0.0, 0.0]
        for name in kept:
            r_in, r_out = _value(rnd, quantized, 50), _value(rnd, quantized, 50)
            size = rnd.choice((100, 1024, 10240))
            st = {"maxSamples": 10, "numSamples": rnd.randint(0, 10), "msgRateIn": r_in, "msgRateOut": r_out,
                  "msgThroughputIn": round(r_in * size, 1), "msgThroughputOut": round(r_out * size, 1)}
            lt = dict(st, maxSamples=1000) if rnd.random() < 0.8 else None
            if rnd.random() < 0.95:  # a few owned bundles the leader has no data of
                bundle_data[name] = {"shortTermData": st, "longTermData": lt, "topics": rnd.randint(0, 50)}
            tot = [tot[0] + r_in, tot[1] + r_out, tot[2] + st["msgThroughputIn"], tot[3] + st["msgThroughputOut"]]
        if rnd.random() < 0.2:  # broker totals that are not the sum of its bundles, as Pulsar's tests set them
            tot = [_value(rnd, quantized, 1000) for _ in range(4)]
        report = {k: _usage(rnd, equal, 100 if k != "cpu" else 130)
                  for k in ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut")}
        report.update(msgRateIn=tot[0], msgRateOut=tot[1], msgThroughputIn=tot[2], msgThroughputOut=tot[3],
                      bundles=kept + (kept[:1] if rnd.random() < 0.1 else []))
        reports[b] = report
    for _ in range(rnd.choice((0, 0, 3))):  # data of bundles no broker reports
        bundle_data[names()] = {"shortTermData": {"maxSamples": 10, "numSamples": 1, "msgRateIn": 1.0, "msgRateOut": 1.0,
                                                  "msgThroughputIn": 1.0, "msgThroughputOut": 1.0}, "topics": 1}
    recent = {n: now_ms - rnd.randint(0, 3_600_000) for n in bundle_data if rnd.random() < 0.05}
    keys = list(bundle_data)
    rnd.shuffle(keys)
    return {"now_ms": now_ms, "brokers": reports, "bundleData": {k: bundle_data[k] for k in keys},
            "recentlyUnloadedBundles": recent}


def shedder_case(i: int) -> dict:
    rnd = random.Random(f"shedders-{i}")
    strategy = STRATEGIES[i % len(STRATEGIES)]
    n = rnd.choice((2, 3, 5, 8, 12, 20)) if rnd.random() < 0.75 else rnd.randint(25, 70)
    pool = broker_names(rnd, n + 4)
    brokers = pool[:n]
    names, owned = Namer(rnd, pool), {}
    quantized, equal = rnd.random() < 0.3, rnd.random() < 0.15
    cycles = []
    for c in range(rnd.choice((1, 2, 3, 5))):
        if c and rnd.random() < 0.3:  # a broker leaves or joins between cycles
            leaving = rnd.choice(brokers)
            brokers = [b for b in brokers if b != leaving] if len(brokers) > 2 and rnd.random() < 0.5 \
                else brokers + [b for b in pool if b not in brokers][:1]
        cycles.append(_cycle(rnd, brokers, names, owned, 1_700_000_000_000 + c * 60_000, quantized, equal))
    return {"name": f"conformance-shedders-{i:04d}", "strategy": strategy, "config": _config(rnd, strategy),
            "cycles": cycles}
