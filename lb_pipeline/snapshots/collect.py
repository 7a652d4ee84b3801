"""``lb-pipeline collect``: one snapshot of a live cluster through Pulsar's admin REST API.

What is read (Pulsar admin v2, v1 paths for v1 namespaces such as ``pulsar/<cluster>/<host:port>`` heartbeats):
the cluster's brokers and leader, every broker's load report (``broker-stats/load-report``),
``broker-stats/topics``, owned bundles and runtime config (each asked of that broker itself), the dynamic config,
the bundle layout and anti-affinity group of every namespace (those the tenants list plus those the brokers
report owning or serving), the failure domains and the namespace isolation policies.

Not reachable through REST, so left out and named in the manifest (``notCollected``): the metadata-store
copies the modular leader acts on (``/loadbalance/bundle-data``, ``/loadbalance/broker-time-average``; the leader
writes them back only every ``loadBalancerResourceQuotaUpdateIntervalMinutes`` and only for the top
``loadBalancerMaxNumberOfBundlesInBundleLoadReport`` bundles per broker). The pipeline then rebuilds the leader's
averages from the snapshot series and says so (``silver/bundle_time_averages``, the report).

The admin API is untrusted input (``admin_client``): names are checked before they touch a URL or a path, responses
are bounded in bytes and time, the token stays with its origin, and a part that could not be read is listed in
``missingParts`` with the reason, so ``complete`` is true only when every part arrived.
"""

from __future__ import annotations

import errno
import sys
import time
import urllib.parse
from pathlib import Path

from lb_pipeline import __version__
from lb_pipeline.errors import LbError
from lb_pipeline.model import names
from lb_pipeline.snapshots import collect_leader, layout, leader_cycle
from lb_pipeline.snapshots.admin_client import AdminClient, RequestFailed
from lb_pipeline.snapshots.layout import FORMAT_VERSION, SnapshotWriter

# read from the metadata store only (the admin API serves resource quotas one bundle a request)
NOT_VIA_REST = ["lb/bundle-data", "lb/broker-time-average", "lb/resource-quota"]
__all__ = ["AdminClient", "RequestFailed", "collect"]


def _progress(enabled: bool, text: str) -> None:
    if enabled:
        print(text, file=sys.stderr, flush=True)


def _q(name: str) -> str:
    """A checked name as a URL path segment (``:`` and ``=`` are legal in Pulsar names)."""
    return urllib.parse.quote(name, safe=":=/")


def _namespace_path(ns: str) -> str:
    """v2 ``/admin/v2/namespaces/t/ns`` or v1 ``/admin/namespaces/t/cluster/ns``."""
    return f"/admin/v2/namespaces/{_q(ns)}" if ns.count("/") == 1 else f"/admin/namespaces/{_q(ns)}"


class _Snapshot:
    """The parts of one snapshot being written, and what went wrong with which."""

    def __init__(self, client: AdminClient, writer: SnapshotWriter):
        self.client, self.writer = client, writer
        self.missing: list[str] = []
        self.errors: dict[str, str] = {}

    def fail(self, rel: str, why: str) -> None:
        self.missing.append(rel)
        self.errors[rel] = why

    def fetch(self, rel: str, path: str, base: str | None = None, allow_missing: bool = False, required: bool = True):
        """GET a JSON part and write it; a failure (or an empty body where a document is due) marks it missing."""
        try:
            value = self.client.get(path, base, allow_missing)
        except RequestFailed as exc:
            self.fail(rel, str(exc))
            return None
        if value is None:
            if required and not allow_missing:
                self.fail(rel, f"GET {path}: empty response")
            return None
        return value if self.write(rel, value) else None

    def write(self, rel: str, value) -> bool:
        """Writes a part; a name the file system cannot hold (longer than a file name, say) marks it missing."""
        try:
            self.writer.write_json(rel, value)
            return True
        except OSError as exc:
            self.fail(rel, f"cannot be written: {exc.strerror or exc}"
                           + (" (a name longer than the file system allows)" if exc.errno == errno.ENAMETOOLONG else ""))
            return False


def collect(client: AdminClient, out: str | Path, cluster: str | None = None, progress: bool | None = None,
            store=None, broker_logs: dict[str, str] | None = None, before_cycle_s: float | None = None,
            parallel: int = 8, deadline_s: float | None = None, watcher=None) -> Path:
    """Take one snapshot; returns its directory. Raises :class:`LbError` only when nothing usable can be read
    (the admin URL does not answer, or names no valid cluster or brokers). ``store``: the metadata store
    (``metadata_store.ZooKeeperStore``), for the leader's own inputs; ``broker_logs``: broker id → its log file,
    whose load-balancer lines since the cluster's previous snapshot are kept (``broker_logs.copy_events``);
    ``before_cycle_s``: time the snapshot so that the metadata store is read that many seconds before the leader's
    next shedding cycle (``leader_cycle``; needs ``store`` and the leader's log). Brokers are asked ``parallel``
    at a time; those not reached within ``deadline_s`` of the start are left missing, with the reason. Progress:
    a line per broker on a terminal, a line every ``PROGRESS_EVERY_S`` otherwise (None: by ``sys.stderr``).
    ``watcher`` (``report_watch.ReportWatcher``): the report writes it kept since the snapshot before go into
    ``lb/report-writes.jsonl``."""
    progress = (True if sys.stderr.isatty() else "periodic") if progress is None else progress
    say = lambda text: _progress(progress is True, text)  # noqa: E731
    if before_cycle_s is not None and (store is None or not broker_logs):
        raise LbError("--before-cycle needs --metadata-store and the leader's --broker-log")
    ts = int(time.time() * 1000)
    try:
        clusters = client.get("/admin/v2/clusters") or []
        cluster = cluster or (clusters[0] if isinstance(clusters, list) and clusters else None)
        if not cluster:
            raise LbError(f"{client.admin_url} lists no cluster; pass --cluster")
        if problem := names.entity_problem(cluster, "cluster name"):
            raise LbError(f"cluster name from {client.admin_url} refused: {problem}")
        listed = client.get(f"/admin/v2/brokers/{_q(cluster)}") or []
        leader = client.get("/admin/v2/brokers/leaderBroker", allow_missing=True) or {}
    except RequestFailed as exc:
        raise LbError(f"cannot read the cluster from {client.admin_url}: {exc}") from None
    # Pulsar answers with a set: a broker repeated (by a proxy, say) is written once, as ingest would keep it
    brokers = list(dict.fromkeys(b for b in listed if names.broker_problem(b) is None)) if isinstance(listed, list) else []
    cycle = None
    if before_cycle_s is not None:
        cycle = collect_leader.wait_for_cycle(client, layout.cluster_folder(out, cluster), _leader_id(leader),
                                              broker_logs, before_cycle_s, say)
        ts = int(time.time() * 1000)
    try:
        writer = SnapshotWriter(out, cluster, ts)
    except OSError as exc:  # a valid cluster name too long for a folder name, a landing folder not writable
        raise LbError(f"cannot write a snapshot of cluster {cluster!r} under {out}: {exc.strerror or exc}") from None
    snap = _Snapshot(client, writer)
    for b in (listed if isinstance(listed, list) else [listed]):
        if b not in brokers:
            snap.fail(f"brokers.json[{b!r}]", names.broker_problem(b) or "not a broker id")
    if not brokers:
        writer.abort()
        raise LbError(f"{client.admin_url} lists no valid broker for cluster {cluster}: {listed!r}")
    try:
        leader_id = _leader_id(leader)
        writer.write_json(layout.BROKERS, {"brokers": brokers, "leader": leader})
        snap.fetch(layout.DYNAMIC_CONFIG, "/admin/v2/brokers/configuration/values")
        snap.fetch(layout.FAILURE_DOMAINS, f"/admin/v2/clusters/{_q(cluster)}/failureDomains", allow_missing=True)
        snap.fetch(layout.ISOLATION_POLICIES, f"/admin/v2/clusters/{_q(cluster)}/namespaceIsolationPolicies",
                   allow_missing=True)
        versions, managers, seen_namespaces = {}, {}, set()
        for broker, report, namespaces_seen in _ask_brokers(client, snap, cluster, brokers, parallel, deadline_s,
                                                            progress):
            if isinstance(report, dict):
                versions[broker] = report.get("brokerVersionString")
                managers[broker] = report.get("loadManagerClassName")
            seen_namespaces |= namespaces_seen
        namespaces = _namespaces(client, snap, seen_namespaces)
        for ns in namespaces:
            _collect_namespace(client, snap, ns)
        _progress(progress is True, f"{len(namespaces)} namespaces read")
        sources = {"lb/brokers": "admin-api"}  # broker-stats/load-report: fresh, the stats cycle of topics/
        if cycle is not None:
            cycle["restMs"] = leader_cycle.now_ms() - ts
            leader_cycle.sleep_until(cycle["readAtMs"])
            cycle["readMs"] = leader_cycle.now_ms()
        if store is not None:
            leader_id, sources = collect_leader.leader_inputs(store, snap, brokers, leader_id, say, cycle)
        if cycle is not None:
            sources["leaderCycle"] = cycle
            if cycle["readMs"] > cycle["expectedMs"]:
                _progress(progress, f"the metadata store was read {cycle['readMs'] - cycle['expectedMs']} ms after the "
                                    "leader's predicted cycle (the REST part took longer than planned)")
        if broker_logs:
            sources["logs"] = collect_leader.broker_logs(snap, broker_logs, ts, say)
        if watcher is not None:
            sources["lb/report-writes"] = collect_leader.report_writes(snap, watcher, say)
        manifest = {
            "formatVersion": FORMAT_VERSION, "cluster": cluster, "snapshotTimestampMs": ts,
            "snapshotTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts / 1000)),
            "tool": f"lb_pipeline {__version__} collect", "pulsarVersion": next(iter(filter(None, versions.values())), None),
            "loadManagerClassName": next(iter(filter(None, managers.values())), None),
            "brokers": brokers, "leader": leader_id, "complete": not snap.missing, "missingParts": sorted(snap.missing),
            "notCollected": NOT_VIA_REST if store is None else [],
            "collector": {"adminUrl": _redact(client.admin_url), "errors": snap.errors, "sources": sources},
        }
        return writer.commit({k: v for k, v in manifest.items() if v is not None})
    except BaseException:
        writer.abort()
        raise


PROGRESS_EVERY_S = 30.0


def _ask_brokers(client: AdminClient, snap: _Snapshot, cluster: str, brokers: list[str], parallel: int,
                 deadline_s: float | None, progress):
    """(broker, its load report, the namespaces it names) per broker, in the listed order, each broker's four
    parts asked of it ``parallel`` brokers at a time (10,000 brokers one after another had taken 46 minutes)."""
    from concurrent.futures import ThreadPoolExecutor

    started, last_line = time.monotonic(), [time.monotonic()]
    too_late = lambda: deadline_s is not None and time.monotonic() - started > deadline_s  # noqa: E731

    def one(broker: str):
        parts = (layout.local_broker_data(broker), layout.topic_stats(broker), layout.ownership(broker),
                 layout.runtime_config(broker))
        if too_late():
            for rel in parts:
                snap.fail(rel, f"not asked: the snapshot's deadline ({deadline_s:g} s, --snapshot-deadline) had passed")
            return broker, None, set()
        base = client.broker_url(broker)
        report = snap.fetch(parts[0], "/admin/v2/broker-stats/load-report", base)
        seen = {b.rsplit("/", 1)[0] for b in report.get("lastStats") or {} if "/" in b} if isinstance(report, dict) \
            else set()
        topics = snap.fetch(parts[1], "/admin/v2/broker-stats/topics", base)
        seen |= set(topics) if isinstance(topics, dict) else set()
        owned = snap.fetch(parts[2], f"/admin/v2/brokers/{_q(cluster)}/{_q(broker)}/ownedNamespaces", base)
        seen |= {b.rsplit("/", 1)[0] for b in owned or {} if "/" in b} if isinstance(owned, dict) else set()
        snap.fetch(parts[3], "/admin/v2/brokers/configuration/runtime", base)
        return broker, report, seen

    with ThreadPoolExecutor(max(1, parallel), thread_name_prefix="collect") as pool:
        for i, (broker, report, seen) in enumerate(pool.map(one, brokers), 1):
            bad = sum(layout.broker_file_stem(broker) in r for r in snap.missing)
            if progress is True:
                _progress(True, f"[{i}/{len(brokers)}] {broker}: {'ok' if not bad else f'{bad} part(s) missing'}")
            elif progress and (i == len(brokers) or time.monotonic() - last_line[0] >= PROGRESS_EVERY_S):
                last_line[0] = time.monotonic()
                _progress(True, f"[{i}/{len(brokers)}] brokers read, {len(set(snap.missing))} part(s) missing so far")
            yield broker, report, seen


def _leader_id(leader) -> str | None:
    """The leader's broker id from ``/admin/v2/brokers/leaderBroker`` (its ``brokerId``, else its service URL's
    host:port), if it is a valid one."""
    if not isinstance(leader, dict):
        return None
    leader_id = leader.get("brokerId") or urllib.parse.urlsplit(str(leader.get("serviceUrl", ""))).netloc or None
    return None if leader_id and names.broker_problem(leader_id) else leader_id


def _namespaces(client: AdminClient, snap: _Snapshot, seen: set[str]) -> list[str]:
    """Every namespace the tenants list, plus those the brokers report (v1 heartbeat namespaces are not listed)."""
    found = set(seen)
    try:
        tenants = client.get("/admin/v2/tenants") or []
    except RequestFailed as exc:
        snap.fail("namespaces/", str(exc))
        tenants = []
    for tenant in tenants if isinstance(tenants, list) else []:
        if problem := names.entity_problem(tenant, "tenant"):
            snap.fail(f"namespaces/{tenant!r}", problem)
            continue
        try:
            listed = client.get(f"/admin/v2/namespaces/{_q(tenant)}") or []
        except RequestFailed as exc:
            snap.fail(f"namespaces/{tenant}/", str(exc))
            continue
        found |= set(x for x in listed if isinstance(x, str)) if isinstance(listed, list) else set()
    valid = []
    for ns in sorted(found):
        if problem := names.namespace_problem(ns):
            snap.fail(f"namespaces/{ns!r}", problem)
        else:
            valid.append(ns)
    return valid


def _collect_namespace(client: AdminClient, snap: _Snapshot, ns: str) -> None:
    """A namespace's bundle layout and anti-affinity group. A broker's heartbeat or SLA-monitor namespace has no
    policies (Pulsar answers 404 for its bundles): nothing is missing then, its one bundle is in the ownership."""
    rel = layout.namespace_file(ns)
    heartbeat = names.is_sla_or_heartbeat(ns)
    try:
        bundles = client.get(_namespace_path(ns) + "/bundles", allow_missing=heartbeat)
        if bundles is None and heartbeat:
            return
        if not isinstance(bundles, dict):
            raise RequestFailed(f"GET {_namespace_path(ns)}/bundles: expected a BundlesData object")
        # a String resource: plain text although declared JSON; 204 when no group is set
        group = client.get_text(_namespace_path(ns) + "/antiAffinity", allow_missing=True)
    except (RequestFailed, UnicodeDecodeError) as exc:
        snap.fail(rel, str(exc))
        return
    doc = {"namespace": ns, "bundles": bundles}
    if group:
        doc["antiAffinityGroup"] = group
    snap.write(rel, doc)


def _redact(url: str) -> str:
    parts = urllib.parse.urlparse(url)
    if parts.password or parts.username:
        parts = parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else ""))
    return urllib.parse.urlunparse(parts)
