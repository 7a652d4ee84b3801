"""``lb-pipeline collect`` against local HTTP servers serving Pulsar-shaped admin responses."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lb_pipeline.cli import main
from lb_pipeline.errors import LbError
from lb_pipeline.snapshots import layout
from lb_pipeline.snapshots.collect import AdminClient, collect
from lb_pipeline.snapshots.generate import Preset, generate
from lb_pipeline.snapshots.load import load_snapshot
from lb_pipeline.ingest.validate import validate_snapshot

TOKEN = "s3cr3t-token-value"
ISOLATION = {"dedicated": {"namespaces": ["tenant-a/orders.*"], "primary": ["127\\.0\\.0\\.1"], "secondary": [],
                           "auto_failover_policy": {"policy_type": "min_available",
                                                    "parameters": {"min_limit": "1", "usage_threshold": "80"}}}}
TINY = Preset("tiny", brokers=4, topics=80, snapshots=1, interval_minutes=60, bundles_per_namespace=(4,),
              topics_per_namespace=20)


class FakeCluster:
    """One HTTP server per broker; the first also answers the cluster-wide admin calls."""

    def __init__(self, source: Path, modes: dict[int, str]):
        manifest = json.loads((source / layout.MANIFEST).read_text())
        self.source, self.names = source, manifest["brokers"]
        self.servers, self.seen_auth = [], []
        for _ in self.names:
            server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
            server.daemon_threads = True
            self.servers.append(server)
        self.ids = [f"127.0.0.1:{s.server_address[1]}" for s in self.servers]
        self.listed = self.ids  # what the cluster's broker list answers
        self.modes = {self.ids[i]: m for i, m in modes.items()}
        for s in self.servers:
            threading.Thread(target=s.serve_forever, daemon=True).start()

    def text(self, rel: str) -> str:
        t = (self.source / rel).read_text()
        for name, new in zip(self.names, self.ids):
            t = t.replace(name, new)
        return t

    def route(self, broker: str, path: str):
        name = self.names[self.ids.index(broker)]
        mode = self.modes.get(broker, "ok")
        cluster_routes = {
            "/admin/v2/clusters": json.dumps(["demo-cluster"]),
            "/admin/v2/brokers/demo-cluster": json.dumps(self.listed),
            "/admin/v2/brokers/leaderBroker": json.dumps({"serviceUrl": f"http://{self.ids[0]}", "brokerId": self.ids[0]}),
            "/admin/v2/brokers/configuration/values": self.text(layout.DYNAMIC_CONFIG),
            "/admin/v2/clusters/demo-cluster/failureDomains": self.text(layout.FAILURE_DOMAINS),
            "/admin/v2/clusters/demo-cluster/namespaceIsolationPolicies": json.dumps(ISOLATION),
            "/admin/v2/tenants": json.dumps(sorted({p.name for p in (self.source / "namespaces").iterdir()})),
        }
        if path in cluster_routes:
            return 200, cluster_routes[path]
        if path.startswith("/admin/v2/namespaces/"):
            parts = path.split("/")[4:]
            if len(parts) == 1:
                return 200, json.dumps([f"{parts[0]}/{p.stem}" for p in (self.source / "namespaces" / parts[0]).glob("*.json")])
            doc = json.loads((self.source / "namespaces" / parts[0] / f"{parts[1]}.json").read_text())
            if parts[2] == "bundles":
                return 200, json.dumps(doc["bundles"])
            return (200, json.dumps(doc["antiAffinityGroup"])) if "antiAffinityGroup" in doc else (404, "")
        if mode == "timeout":
            time.sleep(2.0)
        per_broker = {
            "/admin/v2/broker-stats/load-report": layout.local_broker_data(name),
            "/admin/v2/broker-stats/topics": layout.topic_stats(name),
            f"/admin/v2/brokers/demo-cluster/{broker}/ownedNamespaces": layout.ownership(name),
            "/admin/v2/brokers/configuration/runtime": layout.runtime_config(name),
        }
        if path not in per_broker:
            return 404, ""
        if mode == "500" and path.endswith("/topics"):
            return 500, "internal error"
        if mode == "malformed" and path.endswith("ownedNamespaces"):
            return 200, '{"truncated": '
        return 200, self.text(per_broker[path])

    def _handler(self):
        cluster = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                cluster.seen_auth.append(self.headers.get("Authorization"))
                broker = f"127.0.0.1:{self.server.server_address[1]}"
                code, body = cluster.route(broker, self.path)
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(body.encode())
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the "timeout" broker answers after the client gave up

            def log_message(self, *args):
                pass

        return Handler

    def close(self):
        for s in self.servers:
            s.shutdown()
            s.server_close()


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    return generate(tmp_path_factory.mktemp("src"), TINY, seed=4, snapshots=1)[0]


def _client(fake: FakeCluster, **kw) -> AdminClient:
    return AdminClient(f"http://{fake.ids[0]}", token=TOKEN, timeout=0.5, retries=1, **kw)


def _collected(fake: FakeCluster, out: Path) -> tuple[Path, dict]:
    """The snapshot collected from ``fake`` (stopped after), and its manifest."""
    try:
        snap = collect(_client(fake), out, progress=False)
    finally:
        fake.close()
    return snap, json.loads((snap / layout.MANIFEST).read_text())


def test_collected_snapshot_is_complete_and_passes_the_checker(source, tmp_path):
    fake = FakeCluster(source, {})
    snap, manifest = _collected(fake, tmp_path)
    assert manifest["complete"] and manifest["brokers"] == fake.ids
    assert validate_snapshot(snap) == []
    (policy,) = load_snapshot(snap).cluster_state().isolation  # what the placement path applies
    assert policy.name == "dedicated" and policy.matches("tenant-a/orders-eu") and policy.is_primary("127.0.0.1")
    assert set(fake.seen_auth) == {f"Bearer {TOKEN}"}
    assert not any(TOKEN in p.read_text() for p in snap.rglob("*.json"))
    assert not list(snap.parent.glob(".*"))  # no temporary directory left behind


def test_a_broker_listed_twice_is_collected_once(source, tmp_path):
    fake = FakeCluster(source, {})
    fake.listed = fake.ids + fake.ids[:1]
    snap, manifest = _collected(fake, tmp_path)
    assert manifest["complete"] and manifest["brokers"] == fake.ids
    assert validate_snapshot(snap) == []


def test_broken_brokers_mark_the_snapshot_incomplete_instead_of_aborting(source, tmp_path):
    fake = FakeCluster(source, {1: "timeout", 2: "500", 3: "malformed"})
    snap, manifest = _collected(fake, tmp_path)
    assert not manifest["complete"]
    missing = set(manifest["missingParts"])
    assert layout.local_broker_data(fake.ids[1]) in missing and layout.topic_stats(fake.ids[1]) in missing
    assert layout.topic_stats(fake.ids[2]) in missing and layout.local_broker_data(fake.ids[2]) not in missing
    assert layout.ownership(fake.ids[3]) in missing
    assert "HTTP 500" in manifest["collector"]["errors"][layout.topic_stats(fake.ids[2])]
    assert "not valid JSON" in manifest["collector"]["errors"][layout.ownership(fake.ids[3])]
    findings = validate_snapshot(snap)
    assert [f.field for f in findings] == ["complete"]


def test_unreachable_admin_url_is_one_clear_line(tmp_path, capsys):
    rc = main(["collect", "--admin-url", "http://127.0.0.1:9", "--out", str(tmp_path), "--timeout", "0.5",
               "--retries", "0", "--token", TOKEN])
    err = capsys.readouterr().err
    assert rc == 2 and "cannot read the cluster from http://127.0.0.1:9" in err and TOKEN not in err
    assert len(err.strip().splitlines()) == 1


def test_unreachable_cluster_raises_an_operator_error():
    fake_url = "http://127.0.0.1:9"
    with pytest.raises(LbError):
        collect(AdminClient(fake_url, timeout=0.2, retries=0), "/tmp/never", progress=False)
