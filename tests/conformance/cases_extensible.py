"""Random inputs for the placement strategies and the extensible load manager (TransferShedder, its load
statistics, ``BrokerLoadData.update``, the extensible LeastResourceUsageWithWeight), in the oracle's JSON."""

from __future__ import annotations

import random

from tests.conformance.cases import broker_names

PLACEMENTS = ("LeastLongTermMessageRate", "LeastResourceUsageWithWeight", "RoundRobinBrokerSelector",
              "LoadManagerShared.removeMostServicingBrokersForNamespace")
RESOURCES = ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut")


def _pct(rnd: random.Random, ties: bool) -> dict:
    if ties:
        return {"usage": rnd.choice((10.0, 30.0, 50.0)), "limit": 100.0}
    limit = rnd.choice((100.0, 400.0, 1600.0))
    return {"usage": round(limit * rnd.uniform(0, 120) / 100, 2), "limit": limit}


def _broker(rnd: random.Random, ties: bool, n_bundles: int) -> dict:
    rate = rnd.choice((0.0, 100.0, 1000.0)) if ties else round(rnd.uniform(0, 5000), 2)
    lt_in = rnd.choice((0.0, 500.0)) if ties else round(rnd.uniform(0, 5000), 2)
    pre = {f"tenant/pre/0x{rnd.randrange(1 << 16):04x}0000_0xffffffff": {
        "longTermData": {"maxSamples": 1000, "msgRateIn": round(rnd.uniform(0, 300), 1), "msgRateOut": 1.0},
        "shortTermData": {"maxSamples": 10}, "topics": rnd.randint(0, 20)} for _ in range(rnd.choice((0, 0, 1, 2)))}
    out = {r: _pct(rnd, ties) for r in RESOURCES}
    out.update(msgRateIn=rate, msgRateOut=rate if rnd.random() < 0.5 else 0.0, numTopics=rnd.randint(0, 100),
               bundles=[f"tenant/ns/0x{j:08x}_0x{j + 1:08x}" for j in range(n_bundles)],
               timeAverageData={"longTermMsgRateIn": lt_in, "longTermMsgRateOut": lt_in / 2},
               preallocatedBundleData=pre)
    return out


def placement_case(i: int) -> dict:
    rnd = random.Random(f"placement-{i}")
    strategy = PLACEMENTS[i % len(PLACEMENTS)]
    pool = broker_names(rnd, rnd.choice((2, 3, 5, 10, 40)))
    config = {"loadBalancerBrokerOverloadedThresholdPercentage": rnd.choice((50, 85)),
              "loadBalancerHistoryResourcePercentage": rnd.choice((0.0, 0.5, 0.9)),
              "loadBalancerAverageResourceUsageDifferenceThresholdPercentage": rnd.choice((0, 10, 30)),
              "loadBalancerCPUResourceWeight": rnd.choice((0.5, 1.0))}
    ties = rnd.random() < 0.4
    steps = []
    for _ in range(rnd.choice((1, 3, 6))):
        cands = [b for b in pool if rnd.random() < 0.8] or pool[:1]
        rnd.shuffle(cands)
        if strategy.startswith("LoadManagerShared."):
            ns = rnd.choice(("tenant/a", "tenant/b"))
            cache = {b: {x: [f"0x{j:08x}_0x{j + 1:08x}" for j in range(rnd.choice((0, 1, 1, 2, 3)))]
                         for x in ("tenant/a", "tenant/b")} for b in pool if rnd.random() < 0.8}
            steps.append({"op": "removeMostServicingBrokersForNamespace", "assignedBundle": f"{ns}/0x00000000_0x00000001",
                          "candidates": cands, "bundleRangeCache": cache})
            continue
        brokers = {b: _broker(rnd, ties, rnd.choice((0, 1, 5))) for b in pool}
        step = {"op": "selectBroker", "candidates": cands, "brokers": brokers,
                "bundle": {"longTermData": {"maxSamples": 1000, "msgRateIn": 10.0}, "topics": 1}}
        steps += [step] * (3 if strategy == "LeastLongTermMessageRate" else 1)  # repeated: Pulsar's random pick
    return {"name": f"conformance-placement-{i:04d}", "strategy": strategy, "config": config, "steps": steps}


def _transfer_config(rnd: random.Random) -> dict:
    return {"loadBalancerBrokerLoadTargetStd": rnd.choice((0.05, 0.1, 0.25, 1.5)),
            "loadBalancerSheddingConditionHitCountThreshold": rnd.choice((0, 1, 3)),
            "loadBalancerMaxNumberOfBrokerSheddingPerCycle": rnd.choice((1, 3, 10)),
            "loadBalancerBrokerOverloadedThresholdPercentage": rnd.choice((50, 85)),
            "loadBalancerTransferEnabled": rnd.random() < 0.7, "loadBalancerDebugModeEnabled": rnd.random() < 0.3,
            "loadBalancerBrokerLoadDataTTLInSeconds": rnd.choice((60, 1800)),
            "loadBalanceSheddingDelayInSeconds": rnd.choice((0, 180)),
            "loadBalancerHistoryResourcePercentage": rnd.choice((0.0, 0.5, 0.9)),
            "loadBalancerMemoryResourceWeight": rnd.choice((0.0, 1.0))}


def _store(rnd: random.Random, brokers: list[str], now_ms: int, ties: bool) -> tuple[dict, dict]:
    data, tops = {}, {}
    for b in brokers:
        tp_in = rnd.choice((0.0, 1e6, 1e7)) if ties else round(rnd.uniform(0, 5e7), 1)
        age = rnd.choice((1_000, 10_000, 100_000, 4_000_000)) if rnd.random() < 0.15 else 5_000
        data[b] = {"weightedMaxEMA": rnd.choice((0.1, 0.5, 0.9)) if ties else round(rnd.uniform(0, 1.2), 4),
                   "msgThroughputEMA": round(rnd.uniform(0, 5e7), 1), "msgThroughputIn": tp_in,
                   "msgThroughputOut": round(tp_in * rnd.uniform(0, 2), 1), "updatedAt_ms": now_ms - age}
        tops[b] = [{"bundle": f"tenant/ns-{rnd.randrange(3)}/0x{rnd.randrange(1 << 24):06x}00_0xffffffff",
                    "msgThroughputIn": rnd.choice((0.0, 1e5, 1e6)) if ties else round(rnd.uniform(0, 1e7), 1),
                    "msgThroughputOut": round(rnd.uniform(0, 1e7), 1)} for _ in range(rnd.choice((0, 1, 2, 5, 10)))]
        tops[b].sort(key=lambda t: t["msgThroughputIn"] + t["msgThroughputOut"])
    return data, tops


def transfer_case(i: int) -> dict:
    rnd = random.Random(f"transfer-{i}")
    kind = ("transfer_shedder", "transfer_shedder", "transfer_shedder", "load_stats", "broker_load_data",
            "placement_least_resource_usage_with_weight")[i % 6]
    name, now_ms = f"conformance-transfer-{i:04d}", 1_700_000_000_000
    pool = broker_names(rnd, rnd.choice((2, 3, 4, 6, 12, 30)))
    ties = rnd.random() < 0.3
    if kind == "broker_load_data":
        updates = [{"usage": {r: [round(rnd.uniform(0, 150), 2), rnd.choice((0.0, 100.0, 200.0))] for r in RESOURCES},
                    "msgThroughputIn": round(rnd.uniform(0, 1e7), 1), "msgThroughputOut": round(rnd.uniform(0, 1e7), 1),
                    "msgRateIn": 1.0, "msgRateOut": 2.0, "bundleCount": 3, "topics": 7} for _ in range(rnd.randint(1, 5))]
        return {"name": name, "kind": kind, "config": _transfer_config(rnd), "updates": updates}
    if kind == "placement_least_resource_usage_with_weight":
        steps = [{"broker_weightedMaxEMA": {b: rnd.choice((0.1, 0.5)) if ties else round(rnd.uniform(0, 1), 3)
                                            for b in pool if rnd.random() < 0.9},
                  "candidates": [b for b in pool if rnd.random() < 0.8] or pool[:1]} for _ in range(rnd.randint(1, 4))]
        return {"name": name, "kind": kind, "config": _transfer_config(rnd), "steps": steps}
    data, tops = _store(rnd, pool, now_ms, ties)
    if kind == "load_stats":
        return {"name": name, "kind": kind, "config": _transfer_config(rnd),
                "brokers": {b: {k: v for k, v in d.items() if k != "updatedAt_ms"} for b, d in data.items()}}
    calls = []
    for c in range(rnd.choice((1, 2, 4))):
        call = {"recently_unloaded_bundles": {t["bundle"]: now_ms - 1000 for b in pool for t in tops[b] if rnd.random() < 0.05},
                "recently_unloaded_brokers": {b: now_ms - rnd.choice((60_000, 1_000_000)) for b in pool if rnd.random() < 0.1}}
        overrides = {}
        if c and rnd.random() < 0.5:
            overrides.update(zip(("brokers", "top_bundles"), _store(rnd, pool, now_ms, ties)))
        if rnd.random() < 0.2:
            overrides["ownership"] = {"check_enabled": True, "not_owned": [t["bundle"] for b in pool for t in tops[b]
                                                                           if rnd.random() < 0.2]}
        if overrides:
            call["overrides"] = overrides
        calls.append(call)
    available = [b for b in pool if rnd.random() < 0.95]
    return {"name": name, "kind": kind, "now_ms": now_ms, "config": _transfer_config(rnd), "brokers": data,
            "broker_order": pool, "top_bundles": tops, "available_brokers": available, "calls": calls}
