"""``lb-pipeline collect``: one snapshot of a live cluster through Pulsar's admin REST API.

What is read (Pulsar admin v2): the cluster's brokers and leader, every broker's load report
(``broker-stats/load-report``), ``broker-stats/topics``, owned bundles and runtime config (each asked of that
broker itself), the dynamic config, every namespace's bundles and anti-affinity group, the failure domains and the namespace
isolation policies.

Not reachable through REST, so left out and named in the manifest: the metadata-store copies the modular leader
acts on (``/loadbalance/brokers``, ``/loadbalance/bundle-data``, ``/loadbalance/broker-time-average``); the
REST load report stands in for the first (it can be fresher than the leader's copy).

Failures are bounded: every request has a timeout and a few retries; a broker that cannot be read marks its
parts missing (``complete: false``) instead of aborting; the directory is written atomically. Tokens are sent
as ``Authorization: Bearer`` and never printed.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from lb_pipeline import __version__
from lb_pipeline.errors import LbError
from lb_pipeline.snapshots import layout
from lb_pipeline.snapshots.layout import FORMAT_VERSION, SnapshotWriter

NOT_VIA_REST = ["lb/bundle-data", "lb/broker-time-average"]


class RequestFailed(Exception):
    pass


@dataclass
class AdminClient:
    admin_url: str
    token: str | None = None
    timeout: float = 10.0
    retries: int = 2
    ca_file: str | None = None
    insecure: bool = False
    broker_url_template: str | None = None  # e.g. "https://{host}:8443"; default: admin URL's scheme + broker id
    log: object = field(default=None, repr=False)

    def _context(self):
        if not self.admin_url.startswith("https"):
            return None
        ctx = ssl.create_default_context(cafile=self.ca_file)
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx

    def broker_url(self, broker: str) -> str:
        host, _, port = broker.rpartition(":")
        if self.broker_url_template:
            return self.broker_url_template.format(host=host, port=port, broker=broker)
        scheme = urllib.parse.urlparse(self.admin_url).scheme or "http"
        return f"{scheme}://{broker}"

    def get(self, path: str, base: str | None = None, allow_missing: bool = False):
        url = (base or self.admin_url).rstrip("/") + path
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        last = ""
        for attempt in range(self.retries + 1):
            try:
                req = urllib.request.Request(url, headers=headers)
                with urllib.request.urlopen(req, timeout=self.timeout, context=self._context()) as resp:
                    body = resp.read()
                    if not body.strip():
                        return None
                    try:
                        return json.loads(body)
                    except json.JSONDecodeError as exc:
                        raise RequestFailed(f"GET {path}: response is not valid JSON ({exc.msg})") from None
            except urllib.error.HTTPError as exc:
                if exc.code in (404, 204) and allow_missing:
                    return None
                last = f"HTTP {exc.code}"
                if exc.code < 500:
                    break
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                last = type(exc).__name__ if not str(exc) else str(getattr(exc, "reason", exc))
            if attempt < self.retries:
                time.sleep(0.2 * (attempt + 1))
        raise RequestFailed(f"GET {path} from {base or self.admin_url}: {last}")


def _progress(enabled: bool, text: str) -> None:
    if enabled:
        print(text, file=sys.stderr, flush=True)


def collect(client: AdminClient, out: str | Path, cluster: str | None = None, progress: bool | None = None) -> Path:
    """Take one snapshot; returns its directory. Raises :class:`LbError` only when nothing usable can be read
    (the admin URL itself does not answer)."""
    progress = sys.stderr.isatty() if progress is None else progress
    ts = int(time.time() * 1000)
    try:
        clusters = client.get("/admin/v2/clusters")
        cluster = cluster or (clusters[0] if clusters else None)
        if not cluster:
            raise LbError(f"{client.admin_url} lists no cluster; pass --cluster")
        brokers = client.get(f"/admin/v2/brokers/{cluster}") or []
        leader = client.get("/admin/v2/brokers/leaderBroker", allow_missing=True) or {}
    except RequestFailed as exc:
        raise LbError(f"cannot read the cluster from {client.admin_url}: {exc}") from None
    writer = SnapshotWriter(out, cluster, ts)
    missing: list[str] = []
    errors: dict[str, str] = {}

    def fetch(rel: str, path: str, base: str | None = None, allow_missing: bool = False, transform=None):
        try:
            value = client.get(path, base, allow_missing)
            value = transform(value) if transform else value
            if value is not None:
                writer.write_json(rel, value)
            return value
        except RequestFailed as exc:
            missing.append(rel)
            errors[rel] = str(exc)
            return None

    try:
        leader_id = leader.get("brokerId") or urllib.parse.urlparse(leader.get("serviceUrl", "")).netloc or None
        writer.write_json(layout.BROKERS, {"brokers": brokers, "leader": leader})
        fetch(layout.DYNAMIC_CONFIG, "/admin/v2/brokers/configuration/values")
        fetch(layout.FAILURE_DOMAINS, f"/admin/v2/clusters/{cluster}/failureDomains", allow_missing=True)
        fetch(layout.ISOLATION_POLICIES, f"/admin/v2/clusters/{cluster}/namespaceIsolationPolicies", allow_missing=True)
        versions, managers = {}, {}
        for i, broker in enumerate(brokers, 1):
            base = client.broker_url(broker)
            report = fetch(layout.local_broker_data(broker), "/admin/v2/broker-stats/load-report", base)
            if report:
                versions[broker] = report.get("brokerVersionString")
                managers[broker] = report.get("loadManagerClassName")
            fetch(layout.topic_stats(broker), "/admin/v2/broker-stats/topics", base)
            fetch(layout.ownership(broker), f"/admin/v2/brokers/{cluster}/{broker}/ownedNamespaces", base)
            fetch(layout.runtime_config(broker), "/admin/v2/brokers/configuration/runtime", base)
            bad = [r for r in missing if broker in r or layout.broker_file_stem(broker) in r]
            _progress(progress, f"[{i}/{len(brokers)}] {broker}: {'ok' if not bad else f'{len(bad)} part(s) missing'}")
        namespaces = []
        for tenant in client.get("/admin/v2/tenants") or []:
            namespaces += client.get(f"/admin/v2/namespaces/{tenant}") or []
        for ns in namespaces:
            try:
                bundles = client.get(f"/admin/v2/namespaces/{ns}/bundles")
                group = client.get(f"/admin/v2/namespaces/{ns}/antiAffinity", allow_missing=True)
                doc = {"bundles": bundles}
                if isinstance(group, str) and group:
                    doc["antiAffinityGroup"] = group
                writer.write_json(layout.namespace_file(ns), doc)
            except RequestFailed as exc:
                missing.append(layout.namespace_file(ns))
                errors[layout.namespace_file(ns)] = str(exc)
        _progress(progress, f"{len(namespaces)} namespaces read")
        manifest = {
            "formatVersion": FORMAT_VERSION, "cluster": cluster, "snapshotTimestampMs": ts,
            "snapshotTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts / 1000)),
            "tool": f"lb_pipeline {__version__} collect", "pulsarVersion": next(iter(filter(None, versions.values())), None),
            "loadManagerClassName": next(iter(filter(None, managers.values())), None),
            "brokers": brokers, "leader": leader_id, "complete": not missing, "missingParts": sorted(missing),
            "notCollected": NOT_VIA_REST,
            "collector": {"adminUrl": _redact(client.admin_url), "errors": errors,
                          "note": "lb/brokers holds the REST load-report, not the leader's metadata-store copy"},
        }
        return writer.commit({k: v for k, v in manifest.items() if v is not None})
    except BaseException:
        writer.abort()
        raise


def _redact(url: str) -> str:
    parts = urllib.parse.urlparse(url)
    if parts.password or parts.username:
        parts = parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else ""))
    return urllib.parse.urlunparse(parts)


def client_from_args(args) -> AdminClient:
    token = args.token or os.environ.get("LB_PULSAR_TOKEN")
    if args.token_file:
        token = Path(args.token_file).read_text().strip()
    return AdminClient(args.admin_url, token=token, timeout=args.timeout, retries=args.retries, ca_file=args.ca_file,
                       insecure=args.insecure, broker_url_template=args.broker_url_template)
