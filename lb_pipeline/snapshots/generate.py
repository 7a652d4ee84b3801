"""A deterministic generator of realistic Pulsar cluster histories, in the snapshot format.

What makes it look like a real cluster rather than noise:

* heterogeneous brokers (4/8/16 cores, 10/25 Gbit NICs) whose CPU, NIC and direct-memory usage follow from the
  traffic they host through a per-broker capacity model plus noise, in Pulsar's units;
* namespaces with different bundle counts (some bundles already split), plain and partitioned topics (each
  partition its own topic) hashed by CRC-32 into their bundles;
* Zipf-like topic traffic, a diurnal cycle, short spikes and one steadily growing namespace, every topic small
  enough for the weakest broker at its peak (``capacity_model.servable``); named scenarios add what a preset
  should show beyond that (``SCENARIOS``: the demo's single-topic hot bundle that no split can help);
* scripted events: a broker added empty, a broker removed (its bundles re-owned), a rolling restart;
* consistency: topic rates sum to bundle stats, bundle stats to broker totals; ownership matches ``bundles``.

Everything is a pure function of (preset, seed, start time); each snapshot is written to disk before the next
is computed, so memory stays bounded by one snapshot's topic arrays.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from lb_pipeline import __version__
from lb_pipeline.model.config import MODULAR_LOAD_MANAGER, PROFILES
from lb_pipeline.model.usage import Weights, max_resource_usage, max_resource_usage_with_weight_and_memory
from lb_pipeline.snapshots import layout
from lb_pipeline.snapshots.balance import GeneratorBalancer
from lb_pipeline.snapshots.layout import FORMAT_VERSION, SnapshotWriter
from lb_pipeline.snapshots.synthetic_cluster import (  # noqa: F401  (PRESETS, Preset: the generator's API)
    DEFAULT_START, LONG_SAMPLES, PRESETS, PULSAR_VERSION, SCENARIOS, SHORT_SAMPLES, Cluster, Preset,
    apply_events, apply_incidents, build_cluster, restart_broker, topic_rates,
)
from lb_pipeline.snapshots.capacity_model import cpu_points, nic_out_bits
from lb_pipeline.snapshots.leader_model import TimeAverages, quota_array, resource_quotas
from lb_pipeline.snapshots.seasons import Seasons
def generate(out: str | Path, preset: str | Preset = "demo", seed: int = 7, start: str = DEFAULT_START,
             cluster_name: str = "demo-cluster", snapshots: int | None = None,
             progress: Callable[[int, int, Path], None] | None = None, balance: str | None = None,
             days: int = 1, restart_leader_with: tuple[int, str] | None = None,
             scenarios: tuple[str, ...] | None = None) -> list[Path]:
    """Write a cluster history under ``out/<cluster>/``; returns the snapshot directories, oldest first.
    ``balance``: a modular shedding strategy that balances the cluster once per snapshot (``snapshots.balance``);
    ``restart_leader_with`` (step, strategy): at that snapshot the leader has restarted and balances with another.
    ``days``: that many days of ``snapshots`` (default: the preset's) each, with growth, weekends and incidents.
    ``scenarios``: the named scenarios (``SCENARIOS``) instead of the preset's own."""
    p = PRESETS[preset] if isinstance(preset, str) else preset
    if scenarios is not None:
        unknown = sorted(set(scenarios) - set(SCENARIOS))
        if unknown:
            raise ValueError(f"unknown scenario {', '.join(map(repr, unknown))}; choose from {', '.join(SCENARIOS)}")
        p = replace(p, scenarios=tuple(scenarios))
    if days < 1:
        raise ValueError(f"days must be at least 1 (got {days})")
    per_day = snapshots or p.snapshots
    if days > 1:  # each day's snapshots spread over the whole day, so every day sees the diurnal cycle
        if per_day > 24 * 60:
            raise ValueError(f"at most one snapshot a minute: {per_day} snapshots do not fit in a day")
        p = replace(p, interval_minutes=24 * 60 // per_day)
    n_steps = per_day * days
    start_ms = int(datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp() * 1000)
    cluster = build_cluster(p, seed, start_ms, cluster_name)
    seasons = Seasons.draw(days, start_ms, len(cluster.topic_names), len(cluster.namespaces),
                           len(cluster.broker_ids), seed) if days > 1 else None
    rng = np.random.default_rng(seed + 1)
    averages = TimeAverages(len(cluster.bundle_ns), quota_array(cluster))
    ema: dict[int, float] = {}
    tp_ema: dict[int, float] = {}
    balancer = GeneratorBalancer(balance, p.interval_minutes) if balance else None
    written = []
    for step in range(n_steps):
        ts = start_ms + step * p.interval_minutes * 60_000
        apply_events(cluster, step, n_steps, ts, rng)
        if balancer and restart_leader_with and step == restart_leader_with[0]:
            restart_broker(cluster, int(np.flatnonzero(cluster.live)[0]), ts, rng)
            balancer.start(restart_leader_with[1])
        rates = topic_rates(cluster, step, n_steps, ts, rng)
        if seasons:
            apply_incidents(cluster, seasons.starting(ts, p.interval_minutes), ts, rng)
            factor = seasons.topic_factor(ts, cluster.topic_ns)
            cluster.topic_live = factor > 0
            rates = rates * factor
        path, seen = _write_snapshot(out, cluster, p, step, n_steps, ts, rates, averages, ema, tp_ema, rng, balancer)
        written.append(path)
        if balancer:  # what the leader decides on this snapshot shows in the next one
            cluster.events.extend(balancer.balance(cluster, *seen, ts, ts + p.interval_minutes * 60_000))
        if progress:
            progress(step + 1, n_steps, written[-1])
    return written


def _write_snapshot(out, c: Cluster, p: Preset, step, n_steps, ts, rate_in, averages, ema, tp_ema, rng,
                    balancer=None) -> tuple[Path, tuple]:
    """The snapshot's directory, and what its leader sees: (reports, bundle data, failure domains)."""
    n_bundles, n_brokers = len(c.bundle_ns), len(c.broker_ids)
    t_in = rate_in * c.msg_size
    rate_out = rate_in * c.fanout
    t_out = t_in * c.fanout
    consumers = c.fanout * c.consumers_per_sub
    active = ((rate_in > 0) | (c.producers > 0)) & c.topic_live
    tb = c.topic_bundle

    def per_bundle(x):
        return np.bincount(tb, weights=x, minlength=n_bundles)

    b_rin, b_rout, b_tin, b_tout = per_bundle(rate_in), per_bundle(rate_out), per_bundle(t_in), per_bundle(t_out)
    b_topics = np.bincount(tb, weights=active.astype(float), minlength=n_bundles).astype(int)
    b_prod = per_bundle(c.producers * active).astype(int)
    b_cons = per_bundle(consumers * active).astype(int)
    loaded = b_topics > 0
    # The leader samples every reported bundle about once a minute between two snapshots (afresh after a move).
    averages.follow_owners(c.owner)
    averages.sample(loaded, np.stack([b_rin, b_rout, b_tin, b_tout], axis=1), events=min(p.interval_minutes, 60))

    writer = SnapshotWriter(out, c.name, ts)
    try:
        live = [b for b in range(n_brokers) if c.live[b]]
        leader = c.broker_ids[live[0]]
        runtime = {**PROFILES["pulsar-4.0"], "clusterName": c.name, "failureDomainsEnabled": "true"}
        weights = Weights.from_config(runtime)
        writer.write_json(layout.BROKERS, {"brokers": [c.broker_ids[b] for b in live],
                                           "leader": {"serviceUrl": f"http://{leader}", "brokerId": leader}})
        writer.write_json(layout.DYNAMIC_CONFIG, balancer.dynamic if balancer else {"loadBalancerSheddingEnabled": "true"})
        half = (len(live) + 1) // 2
        zones = {"zone-a": [c.broker_ids[b] for b in live[:half]], "zone-b": [c.broker_ids[b] for b in live[half:]]}
        writer.write_json(layout.FAILURE_DOMAINS, {z: {"brokers": bs} for z, bs in zones.items()})
        reports, seen_data = {}, {}
        for ns in c.namespaces:
            doc = {"bundles": c.layouts[ns].to_bundles_data()}
            if ns in c.aa_group:
                doc["antiAffinityGroup"] = c.aa_group[ns]
            writer.write_json(layout.namespace_file(ns), doc)
        topics_by_bundle: dict[int, list[int]] = {}
        for t in np.flatnonzero(active):
            topics_by_bundle.setdefault(int(tb[t]), []).append(int(t))
        top_k = int(runtime["loadBalancerMaxNumberOfBundlesInBundleLoadReport"]) * len(live)
        rank = np.argsort(-(b_tin + b_tout + b_rin + b_rout), kind="stable")
        stored = set(int(i) for i in rank[:top_k] if loaded[i])
        for b in live:
            bid = c.broker_ids[b]
            owned = np.flatnonzero(c.owner == b)
            reported = [int(i) for i in owned if loaded[i]]
            writer.write_json(layout.runtime_config(bid), runtime)
            writer.write_json(layout.ownership(bid), {
                f"{c.bundle_ns[i]}/{c.bundle_range[i]}": {"broker_assignment": "shared", "is_controlled": False,
                                                          "is_active": True} for i in owned})
            writer.write_json(layout.topic_stats(bid), _topics_doc(c, reported, topics_by_bundle, rate_in, rate_out,
                                                                    t_in, t_out, consumers, ts))
            last_stats = {f"{c.bundle_ns[i]}/{c.bundle_range[i]}": {
                "msgRateIn": float(b_rin[i]), "msgThroughputIn": float(b_tin[i]),
                "msgRateOut": float(b_rout[i]), "msgThroughputOut": float(b_tout[i]),
                "consumerCount": int(b_cons[i]), "producerCount": int(b_prod[i]), "topics": int(b_topics[i]),
                "cacheSize": int(min(b_tin[i] * 2, 64 * 1024 * 1024))} for i in reported}
            report = _local_broker_data(c, b, ts, last_stats, rng)
            writer.write_json(layout.local_broker_data(bid), report)
            reports[bid] = report
            tavg = {"shortTermMsgThroughputIn": 0.0, "shortTermMsgThroughputOut": 0.0, "shortTermMsgRateIn": 0.0,
                    "shortTermMsgRateOut": 0.0, "longTermMsgThroughputIn": 0.0, "longTermMsgThroughputOut": 0.0,
                    "longTermMsgRateIn": 0.0, "longTermMsgRateOut": 0.0}
            for i in reported:
                for w, prefix in ((SHORT_SAMPLES, "shortTerm"), (LONG_SAMPLES, "longTerm")):
                    rin, rout, tin, tout = averages.v[w][i]
                    tavg[prefix + "MsgRateIn"] += rin
                    tavg[prefix + "MsgRateOut"] += rout
                    tavg[prefix + "MsgThroughputIn"] += tin
                    tavg[prefix + "MsgThroughputOut"] += tout
            writer.write_json(layout.broker_time_average(bid), tavg)
            # Optional extensible-load-manager view of the same broker (what a migration would see).
            weighted = max_resource_usage_with_weight_and_memory(report, weights)
            ema[b] = weighted if b not in ema else ema[b] * 0.9 + 0.1 * weighted
            tp = report["msgThroughputIn"] + report["msgThroughputOut"]
            tp_ema[b] = tp if b not in tp_ema else tp_ema[b] * 0.9 + 0.1 * tp
            writer.write_json(layout.broker_load_data(bid), {
                **{r: report[r] for r in ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut")},
                "msgThroughputIn": report["msgThroughputIn"], "msgThroughputOut": report["msgThroughputOut"],
                "msgRateIn": report["msgRateIn"], "msgRateOut": report["msgRateOut"],
                "bundleCount": len(reported), "topics": report["numTopics"],
                "maxResourceUsage": report["maxResourceUsage"], "weightedMaxEMA": ema[b],
                "msgThroughputEMA": tp_ema[b], "updatedAt": ts - 5_000, "reportedAt": ts - 10_000})
            # TopKBundles: the k largest, reported in ascending order (TransferShedder walks them that way);
            # bundles of namespaces with policies (here: anti-affinity) are left out, as newer builds do.
            eligible = [i for i in reported if c.bundle_ns[i] not in c.aa_group]
            top = sorted(eligible, key=lambda i: (b_tin[i] + b_tout[i]))[-10:]
            writer.write_json(layout.top_bundles(bid), {"topBundlesLoadData": [
                {"bundleName": f"{c.bundle_ns[i]}/{c.bundle_range[i]}", "stats": last_stats[
                    f"{c.bundle_ns[i]}/{c.bundle_range[i]}"]} for i in top]})
        for i in np.flatnonzero(loaded):  # the leader's in-memory averages of every reported bundle
            seen_data[f"{c.bundle_ns[i]}/{c.bundle_range[i]}"] = {
                "shortTermData": averages.as_json(i, SHORT_SAMPLES), "longTermData": averages.as_json(i, LONG_SAMPLES),
                "topics": int(b_topics[i])}
        for i in sorted(stored):  # the ones it wrote to the metadata store
            writer.write_json(layout.bundle_data(f"{c.bundle_ns[i]}/{c.bundle_range[i]}"),
                              seen_data[f"{c.bundle_ns[i]}/{c.bundle_range[i]}"])
        for i, quota in resource_quotas(c).items():  # what an admin set, also in the store
            writer.write_json(layout.resource_quota(f"{c.bundle_ns[i]}/{c.bundle_range[i]}"), quota)
        manifest = {
            "formatVersion": FORMAT_VERSION, "cluster": c.name, "snapshotTimestampMs": ts,
            "snapshotTime": datetime.fromtimestamp(ts / 1000, tz=timezone.utc).isoformat().replace("+00:00", "Z"),
            "tool": f"lb_pipeline {__version__} generate", "pulsarVersion": PULSAR_VERSION,
            "loadManagerClassName": MODULAR_LOAD_MANAGER, "brokers": [c.broker_ids[b] for b in live],
            "leader": leader, "complete": True, "missingParts": [],
            "optionalParts": ["lb/broker-load-data", "lb/top-bundles"],
            "generator": {"preset": p.name, "seed": c.seed, "step": step, "scenarios": list(p.scenarios),
                          "balance": balancer.strategy if balancer else None, "events": [
                e for e in c.events if e["ts"] == ts]},
        }
        domains = {b: z for z, bs in zones.items() for b in bs}
        return writer.commit(manifest), (reports, seen_data, domains)
    except BaseException:
        writer.abort()
        raise


def _topics_doc(c: Cluster, reported, topics_by_bundle, rate_in, rate_out, t_in, t_out, consumers, ts) -> dict:
    """``broker-stats topics``: namespace → bundle range → persistent/non-persistent → topic → stats."""
    doc: dict = {}
    elapsed = 3600.0  # counters since the topic loaded: an hour's worth at the current rate
    for i in reported:
        per_domain: dict = {"persistent": {}}
        for t in topics_by_bundle.get(i, []):
            name = c.topic_names[t]
            subs = {}
            for s in range(int(c.fanout[t])):
                n_cons = int(c.consumers_per_sub[t])
                subs[f"sub-{s}"] = {
                    "consumers": [{"consumerName": f"c-{t}-{s}-{k}", "msgRateOut": float(rate_in[t] / n_cons),
                                   "msgThroughputOut": float(t_in[t] / n_cons)} for k in range(n_cons)],
                    "msgBacklog": 0, "msgRateExpired": 0.0, "msgRateOut": float(rate_in[t]),
                    "msgThroughputOut": float(t_in[t]), "msgRateRedeliver": 0.0, "type": "Shared"}
            stats = {
                "publishers": [], "replication": {}, "subscriptions": subs, "producerCount": int(c.producers[t]),
                "averageMsgSize": float(c.msg_size[t]) if rate_in[t] > 0 else 0.0,
                "msgRateIn": float(rate_in[t]), "msgRateOut": float(rate_out[t]),
                "msgInCount": int(rate_in[t] * elapsed), "bytesInCount": int(t_in[t] * elapsed),
                "msgOutCount": int(rate_out[t] * elapsed), "bytesOutCount": int(t_out[t] * elapsed),
                "msgThroughputIn": float(t_in[t]), "msgThroughputOut": float(t_out[t]),
            }
            if c.persistent[t]:
                stats.update({"storageSize": int(t_in[t] * 86400 * 2), "backlogSize": 0, "pendingAddEntriesCount": 0})
                per_domain["persistent"][name] = stats
            else:
                per_domain.setdefault("non-persistent", {})[name] = stats
        doc.setdefault(c.bundle_ns[i], {})[c.bundle_range[i]] = per_domain
    return doc


def _local_broker_data(c: Cluster, b: int, ts: int, last_stats: dict, rng: np.random.Generator) -> dict:
    """``LocalBrokerData`` with resource usage derived from the hosted traffic through a capacity model."""
    rin = sum(s["msgRateIn"] for s in last_stats.values())
    rout = sum(s["msgRateOut"] for s in last_stats.values())
    tin = sum(s["msgThroughputIn"] for s in last_stats.values())
    tout = sum(s["msgThroughputOut"] for s in last_stats.values())
    cores, speed = float(c.cores[b]), float(c.speed[b])
    noise = float(rng.lognormal(0.0, 0.05))
    cpu_limit = cores * 100.0
    cpu = min(cpu_limit, (0.04 * cpu_limit + cpu_points(rin + rout, tin + tout, speed)) * noise)
    nic_limit = float(c.nic_gbps[b]) * 1_000_000.0  # kbit/s
    # NIC in: producers' bytes; NIC out: consumers' bytes plus two bookie replicas of every write.
    bw_in = (tin * 8 / 1000.0) * 1.05 * noise
    bw_out = nic_out_bits(tin, tout) / 1000.0 * noise
    heap_limit, direct_limit = float(c.heap_mib[b]), float(c.direct_mib[b])
    heap = heap_limit * float(rng.uniform(0.3, 0.7))
    direct = min(direct_limit, 256.0 + (tin + tout) / 1.0e5)
    bid = c.broker_ids[b]
    host = bid.split(":")[0]
    report = {
        "webServiceUrl": f"http://{bid}", "pulsarServiceUrl": f"pulsar://{host}:6650",
        "persistentTopicsEnabled": True, "nonPersistentTopicsEnabled": True,
        "cpu": {"usage": round(cpu, 2), "limit": cpu_limit}, "memory": {"usage": round(heap, 1), "limit": heap_limit},
        "directMemory": {"usage": round(direct, 1), "limit": direct_limit},
        "bandwidthIn": {"usage": round(bw_in, 1), "limit": nic_limit},
        "bandwidthOut": {"usage": round(bw_out, 1), "limit": nic_limit},
        "msgThroughputIn": tin, "msgThroughputOut": tout, "msgRateIn": rin, "msgRateOut": rout,
        "lastUpdate": ts - int(rng.integers(1_000, 60_000)), "lastStats": last_stats,
        "numTopics": sum(s["topics"] for s in last_stats.values()), "numBundles": len(last_stats),
        "numConsumers": sum(s["consumerCount"] for s in last_stats.values()),
        "numProducers": sum(s["producerCount"] for s in last_stats.values()),
        "bundles": list(last_stats), "lastBundleGains": [], "lastBundleLosses": [],
        "brokerVersionString": PULSAR_VERSION, "protocols": {}, "advertisedListeners": {},
        "loadManagerClassName": MODULAR_LOAD_MANAGER, "startTimestamp": int(c.start_ts[b]),
    }
    report["maxResourceUsage"] = max_resource_usage(report)
    report["loadReportType"] = "LocalBrokerData"
    return report


def print_progress(done: int, total: int, path: Path) -> None:
    """One line rewritten in place on a terminal; elsewhere (a log, CI) a line per snapshot."""
    if sys.stderr.isatty():
        print(f"\r[{done}/{total}] {path}", end="\n" if done == total else "", file=sys.stderr, flush=True)
    else:
        print(f"[{done}/{total}] {path}", file=sys.stderr, flush=True)
