"""``lb-pipeline collect`` against the admin API as a real Pulsar 4.0.7 cluster answers it (the response shapes of
tests/fixtures/real-pulsar-4.0.7), and against a hostile one."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lb_pipeline.errors import LbError
from lb_pipeline.snapshots import layout
from lb_pipeline.snapshots.collect import AdminClient, collect
from lb_pipeline.snapshots.load import load_snapshot
from lb_pipeline.ingest.validate import validate_snapshot

FIXTURE = Path(__file__).parent / "fixtures" / "real-pulsar-4.0.7" / "lbtest" / "2026-11-22T17-31-14Z"
REAL_IDS = ["127.0.0.1:8081", "127.0.0.1:8080"]
GROUPS = {"lb/ns-a4": "aa-1", "lb/ns-b8": "aa-1"}  # what the real namespaces had (their files were lost)


class Server:
    """HTTP servers whose answers come from ``route(server_index, path) -> (status, headers, body or callable)``."""

    def __init__(self, count: int, route):
        self.route, self.seen = route, []
        self.servers = [ThreadingHTTPServer(("127.0.0.1", 0), self._handler(i)) for i in range(count)]
        for s in self.servers:
            s.daemon_threads = True
            threading.Thread(target=s.serve_forever, daemon=True).start()
        self.ids = [f"127.0.0.1:{s.server_address[1]}" for s in self.servers]

    def _handler(self, index):
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                owner.seen.append((index, self.path, self.headers.get("Authorization")))
                status, headers, body = owner.route(index, self.path)
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    if callable(body):
                        body(self.wfile)
                    elif body is not None:
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        return Handler

    def close(self):
        for s in self.servers:
            s.shutdown()
            s.server_close()


JSON = {"Content-Type": "application/json"}


def _layout_from_ownership(ns: str) -> dict:
    ranges = set()
    for f in (FIXTURE / "ownership").glob("*.json"):
        ranges |= {b.rsplit("/", 1)[1] for b in json.loads(f.read_text()) if b.rsplit("/", 1)[0] == ns}
    bounds = sorted({x for r in ranges for x in r.split("_")}, key=lambda h: int(h, 16))
    return {"boundaries": bounds, "numBundles": len(bounds) - 1}


def real_pulsar(ids: list[str]):
    """Routes answering as Pulsar 4.0.7 does, with the fixture's documents (broker ids rewritten to ``ids``)."""
    def text(rel):
        t = (FIXTURE / rel).read_text()
        for real, new in zip(REAL_IDS, ids):
            t = t.replace(real, new)
        return t.encode()

    cluster_routes = {
        "/admin/v2/clusters": json.dumps(["lbtest"]).encode(),
        "/admin/v2/brokers/lbtest": json.dumps(ids).encode(),
        "/admin/v2/brokers/leaderBroker": json.dumps({"serviceUrl": f"http://{ids[1]}", "brokerId": ids[1]}).encode(),
        "/admin/v2/brokers/configuration/values": text("config/dynamic.json"),
        "/admin/v2/clusters/lbtest/failureDomains": text("cluster/failure-domains.json"),
        "/admin/v2/tenants": b'["lb","public","pulsar"]',
        "/admin/v2/namespaces/lb": b'["lb/ns-a4","lb/ns-b8","lb/ns-c16"]',
        "/admin/v2/namespaces/public": b'["public/default"]',
        "/admin/v2/namespaces/pulsar": b'["pulsar/system"]',  # the v1 heartbeat namespace is not listed
    }

    def route(i, path):
        if path in cluster_routes:
            return 200, JSON, cluster_routes[path]
        if path == "/admin/v2/clusters/lbtest/namespaceIsolationPolicies":
            return 404, JSON, b'{"reason":"NamespaceIsolationPolicies for cluster lbtest does not exist"}'
        if path.startswith(("/admin/v2/namespaces/", "/admin/namespaces/")):
            ns, _, what = path.split("/namespaces/", 1)[1].rpartition("/")
            ns = ns.replace("%3A", ":")
            if what == "antiAffinity":  # a String resource: bare text declared as JSON, or 204 when unset
                return (200, JSON, GROUPS[ns].encode()) if ns in GROUPS else (204, {}, None)
            if ns.startswith("pulsar/") and ns != "pulsar/system":  # heartbeat namespaces have no policies (4.0.7)
                return 404, JSON, b'{"reason":"Namespace does not exist"}'
            f = FIXTURE / "namespaces" / f"{ns}.json"
            doc = json.loads(f.read_text())["bundles"] if f.is_file() else _layout_from_ownership(ns)
            return 200, JSON, json.dumps(doc).encode()
        real = REAL_IDS[i]
        stem = layout.broker_file_stem(real)
        per_broker = {"/admin/v2/broker-stats/load-report": f"lb/brokers/{stem}.json",
                      "/admin/v2/broker-stats/topics": f"topics/{stem}.json",
                      f"/admin/v2/brokers/lbtest/{ids[i]}/ownedNamespaces": f"ownership/{stem}.json",
                      "/admin/v2/brokers/configuration/runtime": f"config/runtime/{stem}.json"}
        if path in per_broker:
            return 200, JSON, text(per_broker[path])
        return 404, JSON, b'{"reason":"Not Found"}'

    return route


@pytest.fixture
def cluster():
    holder = {}
    server = Server(2, lambda i, p: holder["route"](i, p))
    holder["route"] = real_pulsar(server.ids)
    yield server
    server.close()


def test_a_real_clusters_answers_make_a_complete_snapshot(cluster, tmp_path):
    snap = collect(AdminClient(f"http://{cluster.ids[1]}", timeout=2, retries=0), tmp_path, progress=False)
    manifest = json.loads((snap / layout.MANIFEST).read_text())
    assert manifest["complete"] and manifest["missingParts"] == [], manifest["collector"]["errors"]
    assert validate_snapshot(snap) == []
    loaded = load_snapshot(snap)
    assert loaded.groups["lb/ns-a4"] == "aa-1" and loaded.groups["public/default"] is None  # text body; 204
    heartbeat = f"pulsar/lbtest/{cluster.ids[1]}"
    # the v1 heartbeat namespace, found in the reports, asked through the v1 path: no policies, nothing missing
    assert any(heartbeat in p for _, p, _ in cluster.seen) and not (snap / layout.namespace_file(heartbeat)).exists()
    assert not (snap / layout.ISOLATION_POLICIES).exists()  # 404: the cluster has none


def test_the_token_stays_with_its_origin_across_redirects(tmp_path):
    other = Server(1, lambda i, p: (200, JSON, b'["lbtest"]'))
    try:
        target = f"http://{other.ids[0]}/admin/v2/clusters"
        same = Server(1, lambda i, p: (302, {"Location": target}, None) if p == "/admin/v2/clusters" else
                      (302, {"Location": "/admin/v2/clusters"}, None))
        try:
            client = AdminClient(f"http://{same.ids[0]}", token="s3cret", timeout=2, retries=0)
            assert client.get("/admin/v2/clusters") == ["lbtest"]
            assert other.seen[-1][2] is None  # followed, but without the token
            client.get("/moved")
            assert same.seen[-1] == (0, "/admin/v2/clusters", "Bearer s3cret")  # same origin: kept
        finally:
            same.close()
    finally:
        other.close()


def test_responses_are_bounded_in_bytes_and_in_time():
    def drip(w):
        for _ in range(100):
            w.write(b" ")
            w.flush()
            time.sleep(0.2)

    server = Server(1, lambda i, p: (200, JSON, b"[" + b"1," * 600_000 + b"1]") if p == "/big" else (200, JSON, drip))
    try:
        client = AdminClient(f"http://{server.ids[0]}", timeout=0.5, retries=0, max_bytes=1_000_000)
        with pytest.raises(Exception, match="larger than 1000000 bytes"):
            client.get("/big")
        start = time.monotonic()
        with pytest.raises(Exception, match="took longer than"):
            client.get("/drip")
        assert time.monotonic() - start < 3
    finally:
        server.close()


def test_names_from_the_api_never_reach_paths_outside_the_snapshot(tmp_path):
    def route(i, path):
        answers = {"/admin/v2/clusters": b'["lbtest"]',
                   "/admin/v2/brokers/lbtest": json.dumps([server.ids[0], "../../etc:80", "x"]).encode(),
                   "/admin/v2/tenants": b'["../..", "lb"]', "/admin/v2/namespaces/lb": b'["lb/../../../tmp", "lb/ok"]',
                   "/admin/v2/namespaces/lb/ok/bundles": b'{"boundaries":["0x00000000","0xffffffff"],"numBundles":1}'}
        if path in answers:
            return 200, JSON, answers[path]
        if path.endswith("/antiAffinity"):
            return 204, {}, None
        if path == "/admin/v2/broker-stats/topics":
            return 200, JSON, b""  # a blank answer where a document is due
        return 200, JSON, b"{}"

    server = Server(1, route)
    out = tmp_path / "out"
    try:
        snap = collect(AdminClient(f"http://{server.ids[0]}", timeout=2, retries=0), out, progress=False)
    finally:
        server.close()
    manifest = json.loads((snap / layout.MANIFEST).read_text())
    assert manifest["brokers"] == [server.ids[0]] and not manifest["complete"]
    errors = manifest["collector"]["errors"]
    assert any("../../etc:80" in k for k in errors) and any("'../..'" in k for k in errors)
    assert any("lb/../../../tmp" in k for k in errors) and layout.topic_stats(server.ids[0]) in manifest["missingParts"]
    assert sorted(p.relative_to(out).parts[0] for p in out.rglob("*")) == ["lbtest"] * len(list(out.rglob("*")))
    bad = Server(1, lambda i, p: (200, JSON, b'["../../x"]'))
    try:
        with pytest.raises(LbError, match="cluster name .* refused"):
            collect(AdminClient(f"http://{bad.ids[0]}", timeout=2, retries=0), out, progress=False)
    finally:
        bad.close()
