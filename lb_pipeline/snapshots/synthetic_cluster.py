"""The generated cluster's model: presets, the static shape of brokers, namespaces, bundles and topics, the
scripted events that move ownership, and the topic traffic of each step (``generate`` writes it out as snapshots).

Pure functions of (preset, seed, start time) on NumPy arrays; the leader's per-bundle averages are kept by
``leader_model.TimeAverages``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np

from lb_pipeline.model import bundles as bm
from lb_pipeline.snapshots.capacity_model import servable

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
    scenarios: tuple[str, ...] = ()  # named shapes beyond the realistic default (``SCENARIOS``)


# Named scenarios: shapes a preset has only when it names them (``generate --scenario``), recorded in each
# snapshot's manifest (``generator.scenarios``). Without one, no topic needs more than half of the weakest broker
# at the daily peak (``servable``): a preset's comparisons are not decided by one topic no broker could serve.
SCENARIOS = {
    "hot-topic": "one topic carries 26,000 msg/s in by itself, alone above the 30,000 msg/s (in+out) split limit "
                 "and more than a 4-core broker serves: a hot bundle no split can help",
}

PRESETS: dict[str, Preset] = {
    "demo": Preset("demo", brokers=6, topics=900, snapshots=24, interval_minutes=60,
                   bundles_per_namespace=(4, 8, 16), topics_per_namespace=150, scenarios=("hot-topic",)),
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
    hot_topic: int  # the topic of the "hot-topic" scenario (-1: not in this history)
    seed: int = 0
    events: list[dict] = field(default_factory=list)
    topic_live: np.ndarray | bool = True  # topics created so far (multi-day histories create topics as they go)


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
    fanout = rng.choice([0, 1, 1, 2, 3], size=len(names))
    base_rate = servable(base_rate, fanout, msg_size, cores, speed, nic, growth=np.where(steady, 1.0, 3.0))
    hot_topic = -1
    if "hot-topic" in preset.scenarios:
        hot_topic = int(np.flatnonzero(steady)[np.argmax(base_rate[steady])])
        base_rate[hot_topic] = max(base_rate[hot_topic], 26_000.0)  # alone above the 30k msg/s (in+out) split limit

    cluster_ = Cluster(
        name=cluster, broker_ids=broker_ids, cores=cores, nic_gbps=nic, heap_mib=heap, direct_mib=direct,
        speed=speed, namespaces=namespaces, layouts=layouts, aa_group=aa_group, bundle_ns=bundle_ns,
        bundle_range=bundle_range, topic_names=names, topic_bundle=topic_bundle, topic_ns=topic_ns_arr,
        base_rate=base_rate, msg_size=msg_size, fanout=fanout,
        consumers_per_sub=rng.integers(1, 4, size=len(names)), producers=rng.integers(1, 5, size=len(names)),
        persistent=persistent_arr, owner=np.full(len(bundle_ns), -1), live=np.ones(n_brokers, dtype=bool),
        start_ts=start_ms - rng.integers(1, 30, size=n_brokers) * 86_400_000,
        growing_ns=n_ns - 1, hot_topic=hot_topic, seed=seed,
    )
    cluster_.live[-1] = False
    # Initial ownership: weighted by cores with a skew, so that the cluster starts unbalanced.
    weights = cores[:-1] * rng.uniform(0.5, 1.5, size=n_brokers - 1)
    cluster_.owner[:] = rng.choice(n_brokers - 1, size=len(bundle_ns), p=weights / weights.sum())
    _anti_affine(cluster_, np.arange(len(bundle_ns)), np.arange(n_brokers - 1))
    return cluster_


def _reassign(cluster: Cluster, bundle_ids: np.ndarray, rng: np.random.Generator) -> None:
    live = np.flatnonzero(cluster.live)
    if len(live) and len(bundle_ids):
        cluster.owner[bundle_ids] = rng.choice(live, size=len(bundle_ids))
        _anti_affine(cluster, bundle_ids, live)


def _anti_affine(cluster: Cluster, bundle_ids: np.ndarray, live: np.ndarray) -> None:
    """Bundles of an anti-affinity group's namespaces, placed in turn, go where Pulsar's filter lets them
    (``anti_affinity.filter_candidates``, modular counting): the drawn broker if the filter keeps it, else the kept
    broker at the drawn one's position (no further draw, so the rest of the history stays the same)."""
    from lb_pipeline.algorithms.anti_affinity import filter_candidates, owned_counts_modular

    grouped = [k for k, ns in enumerate(cluster.bundle_ns) if cluster.aa_group.get(ns)]  # the filter counts only these
    names = {k: f"{cluster.bundle_ns[k]}/{cluster.bundle_range[k]}" for k in grouped}
    brokers = [cluster.broker_ids[b] for b in live]
    for n in bundle_ids.tolist():
        if n not in names:
            continue
        owners = {names[k]: cluster.broker_ids[cluster.owner[k]] for k in grouped if k != n and cluster.owner[k] >= 0}
        kept = filter_candidates(brokers, owned_counts_modular(cluster.bundle_ns[n], owners, cluster.aa_group))
        drawn = cluster.broker_ids[cluster.owner[n]]
        if kept and drawn not in kept:
            cluster.owner[n] = cluster.broker_ids.index(kept[brokers.index(drawn) % len(kept)] if drawn in brokers
                                                        else kept[0])


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
            restart_broker(cluster, b, ts_ms, rng)
    if step == (2 * n_steps) // 3 and cluster.live[removed]:
        _reassign_from(cluster, removed, rng, keep_alive=False)
        cluster.events.append({"type": "broker-removed", "broker": cluster.broker_ids[removed], "ts": ts_ms})


def apply_incidents(cluster: Cluster, incidents, ts_ms: int, rng: np.random.Generator) -> None:
    """Unscripted incidents of a multi-day history (``seasons.Incident``), recorded as events like the scripted."""
    for inc in incidents:
        if inc.kind == "broker-restart" and cluster.live[inc.target]:
            restart_broker(cluster, inc.target, ts_ms, rng, incident=True)
        elif inc.kind == "traffic-spike":
            cluster.events.append({"type": "traffic-spike", "namespace": cluster.namespaces[inc.target], "ts": ts_ms,
                                   "hours": inc.hours, "factor": 3.0, "incident": True})


def restart_broker(cluster: Cluster, broker: int, ts_ms: int, rng: np.random.Generator, **event) -> None:
    """The broker restarted half a minute before ``ts_ms``: its bundles went to the others, its start time is new."""
    _reassign_from(cluster, broker, rng, keep_alive=True)
    cluster.start_ts[broker] = ts_ms - 30_000
    cluster.events.append({"type": "broker-restarted", "broker": cluster.broker_ids[broker], "ts": ts_ms, **event})


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
