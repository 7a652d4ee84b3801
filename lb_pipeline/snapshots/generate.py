"""A deterministic generator of realistic Pulsar cluster histories, in the snapshot format.

What makes it look like a real cluster rather than noise:

* heterogeneous brokers (4/8/16 cores, 10/25 Gbit NICs) whose CPU, NIC and direct-memory usage follow from the
  traffic they host through a per-broker capacity model plus noise, in Pulsar's units;
* namespaces with different bundle counts (some bundles already split), plain and partitioned topics (each
  partition its own topic) hashed by CRC-32 into their bundles;
* Zipf-like topic traffic, a diurnal cycle, short spikes, one steadily growing namespace, and a single-topic
  hot bundle that no split can help;
* scripted events: a broker added empty, a broker removed (its bundles re-owned), a rolling restart;
* consistency: topic rates sum to bundle stats, bundle stats to broker totals; ownership matches ``bundles``.

Everything is a pure function of (preset, seed, start time); each snapshot is written to disk before the next
is computed, so memory stays bounded by one snapshot's topic arrays.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from lb_pipeline import __version__
from lb_pipeline.model import bundles as bm
from lb_pipeline.model.config import MODULAR_LOAD_MANAGER, PROFILES
from lb_pipeline.model.usage import Weights, max_resource_usage, max_resource_usage_with_weight_and_memory
from lb_pipeline.snapshots import layout
from lb_pipeline.snapshots.layout import FORMAT_VERSION, SnapshotWriter

PULSAR_VERSION = "4.0.8"
SHORT_SAMPLES, LONG_SAMPLES = 10, 1000
DEFAULT_BUNDLE_RATE, DEFAULT_BUNDLE_THROUGHPUT = 50.0, 50000.0
AA_GROUP = "payments-aa"


@dataclass(frozen=True)
class Preset:
    name: str
    brokers: int
    topics: int
    snapshots: int
    interval_minutes: int
    bundles_per_namespace: tuple[int, ...]
    topics_per_namespace: int


PRESETS: dict[str, Preset] = {
    "demo": Preset("demo", brokers=6, topics=900, snapshots=24, interval_minutes=60,
                   bundles_per_namespace=(4, 8, 16), topics_per_namespace=150),
    "S": Preset("S", brokers=20, topics=10_000, snapshots=24, interval_minutes=60,
                bundles_per_namespace=(8, 16, 32, 64), topics_per_namespace=500),
    "M": Preset("M", brokers=100, topics=100_000, snapshots=24, interval_minutes=60,
                bundles_per_namespace=(32, 64, 128), topics_per_namespace=800),
    "L": Preset("L", brokers=500, topics=1_000_000, snapshots=24, interval_minutes=60,
                bundles_per_namespace=(64, 128), topics_per_namespace=2000),
}
DEFAULT_START = "2026-01-15T00:00:00Z"

_TENANTS = ("acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka")
_WORDS = ("orders", "billing", "payments", "clicks", "telemetry", "audit", "search", "inventory", "shipping",
          "alerts", "metrics", "sessions", "profiles", "ledger", "events", "logs")


@dataclass
class Cluster:
    """The static shape of the generated cluster plus the ownership that events mutate."""

    name: str
    broker_ids: list[str]
    cores: np.ndarray
    nic_gbps: np.ndarray
    heap_mib: np.ndarray
    direct_mib: np.ndarray
    speed: np.ndarray  # per-broker efficiency (older hardware burns more CPU per message)
    namespaces: list[str]
    layouts: dict[str, bm.NamespaceBundles]
    aa_group: dict[str, str]
    bundle_ns: list[str]
    bundle_range: list[str]
    topic_names: list[str]
    topic_bundle: np.ndarray  # bundle index of each topic
    topic_ns: np.ndarray  # namespace index of each topic
    base_rate: np.ndarray  # msg/s in at the daily mean
    msg_size: np.ndarray  # bytes
    fanout: np.ndarray  # subscriptions per topic
    consumers_per_sub: np.ndarray
    producers: np.ndarray
    persistent: np.ndarray
    owner: np.ndarray  # broker index owning each bundle (-1 = none)
    live: np.ndarray  # bool per broker
    start_ts: np.ndarray  # broker start timestamps (ms)
    growing_ns: int
    hot_topic: int
    seed: int = 0
    events: list[dict] = field(default_factory=list)


def build_cluster(preset: Preset, seed: int, start_ms: int, cluster: str = "demo-cluster") -> Cluster:
    rng = np.random.default_rng(seed)
    n_brokers = preset.brokers + 1  # the last one joins mid-run (the "broker added" event)
    broker_ids = [f"broker-{i}.pulsar.svc:8080" for i in range(n_brokers)]
    cores = rng.choice([4, 8, 16], size=n_brokers, p=[0.25, 0.5, 0.25])
    nic = rng.choice([10, 25], size=n_brokers, p=[0.7, 0.3])
    heap = cores * 1024.0
    direct = cores * 1024.0
    speed = rng.uniform(0.7, 1.3, size=n_brokers)

    n_ns = max(4, preset.topics // preset.topics_per_namespace)
    namespaces, layouts, aa_group = [], {}, {}
    for i in range(n_ns):
        tenant = _TENANTS[i % len(_TENANTS)]
        ns = f"{tenant}/{_WORDS[i % len(_WORDS)]}" + (f"-{i // len(_WORDS)}" if i >= len(_WORDS) else "")
        namespaces.append(ns)
        layout_ = bm.NamespaceBundles.with_default(ns, int(rng.choice(preset.bundles_per_namespace)))
        # Some bundles were split in the past: a realistic cluster does not have a perfect grid.
        for _ in range(int(rng.integers(0, 3))):
            target = layout_.bundles[int(rng.integers(0, len(layout_)))]
            if len(layout_) < 128 and target.can_split:
                layout_, _children = layout_.split(target, 2)
        layouts[ns] = layout_
    for ns in namespaces[:2]:
        aa_group[ns] = AA_GROUP
    bundle_ns, bundle_range, bundle_index = [], [], {}
    for ns in namespaces:
        for b in layouts[ns].bundles:
            bundle_index[(ns, b.range)] = len(bundle_ns)
            bundle_ns.append(ns)
            bundle_range.append(b.range)

    # Topics: namespace sizes vary; about a third of the topics are partitions of partitioned topics.
    ns_weights = rng.dirichlet(np.full(n_ns, 2.0))
    names: list[str] = []
    topic_ns: list[int] = []
    persistent: list[bool] = []
    while len(names) < preset.topics:
        k = int(rng.choice(n_ns, p=ns_weights))
        is_persistent = rng.random() > 0.05
        domain = "persistent" if is_persistent else "non-persistent"
        base = f"{domain}://{namespaces[k]}/{_WORDS[int(rng.integers(0, len(_WORDS)))]}-{len(names)}"
        if rng.random() < 0.08:
            parts = int(rng.choice([4, 8, 16]))
            new = [f"{base}-partition-{p}" for p in range(parts)]
        else:
            new = [base]
        names.extend(new)
        topic_ns.extend([k] * len(new))
        persistent.extend([is_persistent] * len(new))
    names, topic_ns_arr = names[: preset.topics], np.array(topic_ns[: preset.topics])
    persistent_arr = np.array(persistent[: preset.topics])
    topic_bundle = np.empty(len(names), dtype=np.int64)
    for i, name in enumerate(names):
        ns = namespaces[topic_ns_arr[i]]
        b = layouts[ns].find_bundle(name)
        topic_bundle[i] = bundle_index[(ns, b.range)]

    # Zipf-like popularity; total traffic sized to load the cluster to about half of its capacity.
    ranks = rng.permutation(len(names)) + 1
    popularity = 1.0 / ranks.astype(float) ** 1.05
    msg_size = np.clip(rng.lognormal(np.log(1024), 0.8, len(names)), 64, 64 * 1024)
    capacity_msgs = float((cores * 100.0 * speed).sum()) * 60.0  # ~60 msg/s per CPU point at full load
    base_rate = popularity / popularity.sum() * capacity_msgs * 0.12
    base_rate[rng.random(len(names)) < 0.04] = 0.0  # idle topics exist
    steady = topic_ns_arr != n_ns - 1  # the hot topic is not in the growing namespace
    hot_topic = int(np.flatnonzero(steady)[np.argmax(base_rate[steady])])
    base_rate[hot_topic] = max(base_rate[hot_topic], 26_000.0)  # alone above the 30k msg/s (in+out) split limit

    cluster_ = Cluster(
        name=cluster, broker_ids=broker_ids, cores=cores, nic_gbps=nic, heap_mib=heap, direct_mib=direct,
        speed=speed, namespaces=namespaces, layouts=layouts, aa_group=aa_group, bundle_ns=bundle_ns,
        bundle_range=bundle_range, topic_names=names, topic_bundle=topic_bundle, topic_ns=topic_ns_arr,
        base_rate=base_rate, msg_size=msg_size, fanout=rng.choice([0, 1, 1, 2, 3], size=len(names)),
        consumers_per_sub=rng.integers(1, 4, size=len(names)), producers=rng.integers(1, 5, size=len(names)),
        persistent=persistent_arr, owner=np.full(len(bundle_ns), -1), live=np.ones(n_brokers, dtype=bool),
        start_ts=start_ms - rng.integers(1, 30, size=n_brokers) * 86_400_000,
        growing_ns=n_ns - 1, hot_topic=hot_topic, seed=seed,
    )
    cluster_.live[-1] = False
    # Initial ownership: weighted by cores with a skew, so that the cluster starts unbalanced.
    weights = cores[:-1] * rng.uniform(0.5, 1.5, size=n_brokers - 1)
    cluster_.owner[:] = rng.choice(n_brokers - 1, size=len(bundle_ns), p=weights / weights.sum())
    return cluster_


def _reassign(cluster: Cluster, bundle_ids: np.ndarray, rng: np.random.Generator) -> None:
    live = np.flatnonzero(cluster.live)
    if len(live) and len(bundle_ids):
        cluster.owner[bundle_ids] = rng.choice(live, size=len(bundle_ids))


def apply_events(cluster: Cluster, step: int, n_steps: int, ts_ms: int, rng: np.random.Generator) -> None:
    """Scripted events: broker added (empty) at 1/3, rolling restart around 1/2, broker removed at 2/3."""
    added, removed = len(cluster.broker_ids) - 1, 1
    if step == n_steps // 3:
        cluster.live[added] = True
        cluster.start_ts[added] = ts_ms - 60_000
        cluster.events.append({"type": "broker-added", "broker": cluster.broker_ids[added], "ts": ts_ms})
    restart_start = n_steps // 2
    restarting = step - restart_start
    if 0 <= restarting < min(3, len(cluster.broker_ids) - 2):
        b = 2 + restarting
        if cluster.live[b]:
            _reassign_from(cluster, b, rng, keep_alive=True)
            cluster.start_ts[b] = ts_ms - 30_000
            cluster.events.append({"type": "broker-restarted", "broker": cluster.broker_ids[b], "ts": ts_ms})
    if step == (2 * n_steps) // 3 and cluster.live[removed]:
        _reassign_from(cluster, removed, rng, keep_alive=False)
        cluster.events.append({"type": "broker-removed", "broker": cluster.broker_ids[removed], "ts": ts_ms})


def _reassign_from(cluster: Cluster, broker: int, rng: np.random.Generator, keep_alive: bool) -> None:
    cluster.live[broker] = False
    _reassign(cluster, np.flatnonzero(cluster.owner == broker), rng)
    cluster.live[broker] = keep_alive


def topic_rates(cluster: Cluster, step: int, n_steps: int, ts_ms: int, rng: np.random.Generator) -> np.ndarray:
    hour = datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc).hour  # diurnal by wall clock
    diurnal = 1.0 + 0.45 * np.sin(2 * np.pi * (hour - 9) / 24.0)
    rate = cluster.base_rate * diurnal * rng.lognormal(0.0, 0.12, size=len(cluster.base_rate))
    rate[cluster.topic_ns == cluster.growing_ns] *= 1.0 + 2.0 * step / max(1, n_steps - 1)
    spikes = rng.random(len(rate)) < 0.002
    rate[spikes] *= rng.uniform(3, 8, size=int(spikes.sum()))
    rate[cluster.base_rate == 0] = 0.0
    return rate


class _TimeAverages:
    """The leader's in-memory ``TimeAverageMessageData`` for every bundle (short 10, long 1000 samples)."""

    def __init__(self, n_bundles: int):
        self.n = {w: np.zeros(n_bundles) for w in (SHORT_SAMPLES, LONG_SAMPLES)}
        self.v = {w: np.tile([DEFAULT_BUNDLE_RATE, DEFAULT_BUNDLE_RATE, DEFAULT_BUNDLE_THROUGHPUT,
                              DEFAULT_BUNDLE_THROUGHPUT], (n_bundles, 1)) for w in (SHORT_SAMPLES, LONG_SAMPLES)}

    def sample(self, mask: np.ndarray, x: np.ndarray, events: int) -> None:
        """Apply ``n = min(n+1, max); avg = ((n-1)*avg + x)/n`` ``events`` times to the bundles in ``mask``."""
        for w in (SHORT_SAMPLES, LONG_SAMPLES):
            n, v = self.n[w], self.v[w]
            for _ in range(events):
                n[mask] = np.minimum(n[mask] + 1, w)
                v[mask] = ((n[mask, None] - 1) * v[mask] + x[mask]) / n[mask, None]

    def as_json(self, i: int, w: int) -> dict:
        rin, rout, tin, tout = self.v[w][i]
        return {"maxSamples": w, "numSamples": int(self.n[w][i]), "msgThroughputIn": float(tin),
                "msgThroughputOut": float(tout), "msgRateIn": float(rin), "msgRateOut": float(rout)}


def generate(out: str | Path, preset: str | Preset = "demo", seed: int = 7, start: str = DEFAULT_START,
             cluster_name: str = "demo-cluster", snapshots: int | None = None,
             progress: Callable[[int, int, Path], None] | None = None) -> list[Path]:
    """Write a cluster history under ``out/<cluster>/``; returns the snapshot directories, oldest first."""
    p = PRESETS[preset] if isinstance(preset, str) else preset
    n_steps = snapshots or p.snapshots
    start_ms = int(datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp() * 1000)
    cluster = build_cluster(p, seed, start_ms, cluster_name)
    rng = np.random.default_rng(seed + 1)
    averages = _TimeAverages(len(cluster.bundle_ns))
    ema: dict[int, float] = {}
    tp_ema: dict[int, float] = {}
    written = []
    for step in range(n_steps):
        ts = start_ms + step * p.interval_minutes * 60_000
        apply_events(cluster, step, n_steps, ts, rng)
        rates = topic_rates(cluster, step, n_steps, ts, rng)
        written.append(_write_snapshot(out, cluster, p, step, n_steps, ts, rates, averages, ema, tp_ema, rng))
        if progress:
            progress(step + 1, n_steps, written[-1])
    return written


def _write_snapshot(out, c: Cluster, p: Preset, step, n_steps, ts, rate_in, averages, ema, tp_ema, rng) -> Path:
    n_bundles, n_brokers = len(c.bundle_ns), len(c.broker_ids)
    t_in = rate_in * c.msg_size
    rate_out = rate_in * c.fanout
    t_out = t_in * c.fanout
    consumers = c.fanout * c.consumers_per_sub
    active = (rate_in > 0) | (c.producers > 0)
    tb = c.topic_bundle

    def per_bundle(x):
        return np.bincount(tb, weights=x, minlength=n_bundles)

    b_rin, b_rout, b_tin, b_tout = per_bundle(rate_in), per_bundle(rate_out), per_bundle(t_in), per_bundle(t_out)
    b_topics = np.bincount(tb, weights=active.astype(float), minlength=n_bundles).astype(int)
    b_prod = per_bundle(c.producers * active).astype(int)
    b_cons = per_bundle(consumers * active).astype(int)
    loaded = b_topics > 0
    # The leader samples every reported bundle about once a minute between two snapshots.
    averages.sample(loaded, np.stack([b_rin, b_rout, b_tin, b_tout], axis=1), events=min(p.interval_minutes, 60))

    writer = SnapshotWriter(out, c.name, ts)
    try:
        live = [b for b in range(n_brokers) if c.live[b]]
        leader = c.broker_ids[live[0]]
        runtime = {**PROFILES["pulsar-4.0"], "clusterName": c.name, "failureDomainsEnabled": "true"}
        weights = Weights.from_config(runtime)
        writer.write_json(layout.BROKERS, {"brokers": [c.broker_ids[b] for b in live],
                                           "leader": {"serviceUrl": f"http://{leader}", "brokerId": leader}})
        writer.write_json(layout.DYNAMIC_CONFIG, {"loadBalancerSheddingEnabled": "true"})
        half = (len(live) + 1) // 2
        writer.write_json(layout.FAILURE_DOMAINS, {
            "zone-a": {"brokers": [c.broker_ids[b] for b in live[:half]]},
            "zone-b": {"brokers": [c.broker_ids[b] for b in live[half:]]},
        })
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
        for i in sorted(stored):
            writer.write_json(layout.bundle_data(f"{c.bundle_ns[i]}/{c.bundle_range[i]}"), {
                "shortTermData": averages.as_json(i, SHORT_SAMPLES), "longTermData": averages.as_json(i, LONG_SAMPLES),
                "topics": int(b_topics[i])})
        manifest = {
            "formatVersion": FORMAT_VERSION, "cluster": c.name, "snapshotTimestampMs": ts,
            "snapshotTime": datetime.fromtimestamp(ts / 1000, tz=timezone.utc).isoformat().replace("+00:00", "Z"),
            "tool": f"lb_pipeline {__version__} generate", "pulsarVersion": PULSAR_VERSION,
            "loadManagerClassName": MODULAR_LOAD_MANAGER, "brokers": [c.broker_ids[b] for b in live],
            "leader": leader, "complete": True, "missingParts": [],
            "optionalParts": ["lb/broker-load-data", "lb/top-bundles"],
            "generator": {"preset": p.name, "seed": c.seed, "step": step, "events": [
                e for e in c.events if e["ts"] == ts]},
        }
        return writer.commit(manifest)
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
    cpu = min(cpu_limit, (0.04 * cpu_limit + (rin + rout) / 120.0 / speed + (tin + tout) / 2.0e6) * noise)
    nic_limit = float(c.nic_gbps[b]) * 1_000_000.0  # kbit/s
    # NIC in: producers' bytes; NIC out: consumers' bytes plus two bookie replicas of every write.
    bw_in = (tin * 8 / 1000.0) * 1.05 * noise
    bw_out = ((tout + 2 * tin) * 8 / 1000.0) * 1.05 * noise
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
    print(f"\r[{done}/{total}] {path}", end="\n" if done == total else "", file=sys.stderr, flush=True)
