"""An admin API that breaks HTTP or JSON: each request fails with its reason, inside its deadline, and the
snapshot keeps every part that did arrive (a raw ``http.client`` error had ended ``collect`` with a traceback and
lost the snapshot)."""

import json
import socket
import threading
import time

import pytest

from lb_pipeline.snapshots import layout
from lb_pipeline.snapshots.admin_client import AdminClient, RequestFailed
from lb_pipeline.snapshots.collect import collect

OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"


class RawServer:
    """A TCP server that answers every request with ``answer(path)``: raw bytes, or a callable given the socket."""

    def __init__(self, answer):
        self.answer, self.sock = answer, socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                data = conn.recv(4096)
                if not data:
                    return
                request += data
            path = request.split(b" ")[1].decode()
            answer = self.answer(path)
            try:
                answer(conn) if callable(answer) else conn.sendall(answer)
            except OSError:
                pass

    def close(self):
        self.sock.close()


BROKEN = {
    "a garbage status line": (b"SPDY/9 hello\r\n\r\n", "BadStatusLine"),
    "more than 100 headers": (OK + b"".join(b"X-%d: 1\r\n" % i for i in range(150)) + b"\r\n{}", "got more than 100 headers"),
    "a 70 kB header line": (OK + b"X-Big: " + b"a" * 70_000 + b"\r\n\r\n{}", "LineTooLong"),
    "a malformed chunked body": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
                                 "IncompleteRead"),
    "NaN in a document": (OK + b"\r\n" + b'{"cpu": {"usage": NaN, "limit": 100.0}}', "a non-finite number NaN"),
    "a number beyond a double": (OK + b"\r\n" + b'{"cpu": {"usage": 1e999}}', "beyond a double's range"),
}


@pytest.mark.parametrize("kind", BROKEN)
def test_broken_http_or_json_is_a_failed_request_with_its_reason(kind):
    raw, reason = BROKEN[kind]
    server = RawServer(lambda path: raw)
    try:
        with pytest.raises(RequestFailed, match=reason):
            AdminClient(server.url, timeout=2, retries=0).get("/admin/v2/broker-stats/load-report")
    finally:
        server.close()


def test_a_status_line_and_headers_dripped_byte_by_byte_end_at_the_deadline():
    """Each byte comes well within the socket timeout, so only a deadline over the whole request ends it."""
    def drip(conn):
        for byte in OK + b"X-Slow: " + b"a" * 200:
            conn.sendall(bytes([byte]))
            time.sleep(0.05)

    server = RawServer(lambda path: drip)
    try:
        start = time.monotonic()
        with pytest.raises(RequestFailed, match="took longer than 1 s \\(its status line and headers\\)"):
            AdminClient(server.url, timeout=0.5, retries=0, deadline=1.0).get("/admin/v2/clusters")
        assert time.monotonic() - start < 2.5
    finally:
        server.close()


def test_a_broker_answering_broken_http_leaves_its_parts_missing_and_the_snapshot_kept(tmp_path):
    """The cluster-wide calls answer; the broker's own calls answer garbage: the snapshot is written, incomplete,
    each of the broker's parts missing with the reason."""
    def answer(path):
        documents = {"/admin/v2/clusters": ["c1"], "/admin/v2/brokers/c1": [broker],
                     "/admin/v2/brokers/leaderBroker": {"brokerId": broker}, "/admin/v2/tenants": [],
                     "/admin/v2/brokers/configuration/values": {}}
        if path in documents:
            return OK + b"\r\n" + json.dumps(documents[path]).encode()
        if path.startswith("/admin/v2/clusters/c1/"):
            return b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        return b"SPDY/9 hello\r\n\r\n" if "topics" in path else OK + b"\r\n" + b'{"cpu": NaN}'

    server = RawServer(answer)
    broker = server.url.split("//")[1]
    try:
        snap = collect(AdminClient(server.url, timeout=2, retries=0), tmp_path, progress=False)
    finally:
        server.close()
    manifest = json.loads((snap / layout.MANIFEST).read_text())
    errors = manifest["collector"]["errors"]
    assert not manifest["complete"] and layout.DYNAMIC_CONFIG not in manifest["missingParts"]
    assert "BadStatusLine" in errors[layout.topic_stats(broker)]
    assert "a non-finite number NaN" in errors[layout.local_broker_data(broker)]


def test_temporary_folders_of_writers_that_died_are_removed_at_the_next_start(tmp_path):
    import os
    import subprocess

    from lb_pipeline.snapshots.layout import SnapshotWriter

    cluster = tmp_path / "c1"
    gone = subprocess.Popen(["true"])  # a pid that no longer runs
    gone.wait()
    names = {"dead": f".2026-01-15T08-00-00Z.{gone.pid}.abc", "alive": f".2026-01-15T09-00-00Z.{os.getpid()}.abc",
             "old": ".2026-01-14T08-00-00Z.k2j3", "fresh": ".2026-01-15T10-00-00Z.k2j3"}
    for name in names.values():
        (cluster / name / "lb").mkdir(parents=True)
    os.utime(cluster / names["old"], (time.time() - 2 * 86400,) * 2)
    writer = SnapshotWriter(tmp_path, "c1", 1_768_500_000_000)
    assert sorted(writer.removed) == sorted([names["dead"], names["old"]])
    left = sorted(p.name for p in cluster.iterdir())
    assert left == sorted([names["alive"], names["fresh"], writer.tmp.name])
    assert f".{os.getpid()}." in writer.tmp.name  # the next start can tell whether its writer still runs


def test_a_collect_stopped_with_sigterm_leaves_no_temporary_folder(tmp_path):
    import signal
    import subprocess
    import sys

    def answer(path):
        documents = {"/admin/v2/clusters": ["c1"], "/admin/v2/brokers/c1": [broker],
                     "/admin/v2/brokers/leaderBroker": {"brokerId": broker}}
        if path in documents:
            return OK + b"\r\n" + json.dumps(documents[path]).encode()
        return lambda conn: time.sleep(30)  # every other part hangs until the collector is stopped

    server = RawServer(answer)
    broker = server.url.split("//")[1]
    out = tmp_path / "landing"
    try:
        proc = subprocess.Popen([sys.executable, "-m", "lb_pipeline.cli", "collect", "--admin-url", server.url,
                                 "--out", str(out), "--timeout", "20", "--quiet"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not list(out.glob("c1/.*")) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert list(out.glob("c1/.*")), proc.communicate()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        server.close()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert list((out / "c1").iterdir()) == []


def test_a_body_whose_parse_would_take_many_times_the_response_cap_is_not_parsed():
    dense = b"[" + b"1," * 400_000 + b"1]"  # 800 kB of values, ~40 MB parsed
    server = RawServer(lambda path: OK + b"\r\n" + (dense if path == "/dense" else REAL_REPORT))
    try:
        client = AdminClient(server.url, timeout=2, retries=0, max_bytes=1_000_000)
        with pytest.raises(RequestFailed, match="400002 values in 800003 bytes would take about 38 MiB to parse, "
                                                "more than 8 × --max-response-bytes"):
            client.get("/dense")
        assert client.get("/report")["cpu"]["limit"] == 25.0  # a Pulsar document under the cap is parsed
    finally:
        server.close()


REAL_REPORT = open("tests/fixtures/real-runs/overload/landing/lbtest/2026-12-02T03-07-38Z/lb/brokers/"
                   "127.0.0.1_8080.json", "rb").read()


def test_tls_is_verified_through_the_timed_connections(tmp_path):
    """The per-request deadline comes with ``http.client`` connections of its own: HTTPS through them still
    verifies the server against ``--ca-file``, refuses an unknown certificate, and skips the check only with
    ``--insecure``."""
    import ssl
    import subprocess
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp_path / "key.pem"),
                    "-out", str(tmp_path / "cert.pem"), "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'["lbtest"]')

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"https://127.0.0.1:{server.server_address[1]}"
    try:
        assert AdminClient(url, ca_file=str(tmp_path / "cert.pem"), timeout=2, retries=0).get("/admin/v2/clusters") == ["lbtest"]
        with pytest.raises(RequestFailed, match="CERTIFICATE_VERIFY_FAILED"):
            AdminClient(url, timeout=2, retries=0).get("/admin/v2/clusters")
        assert AdminClient(url, insecure=True, timeout=2, retries=0).get("/admin/v2/clusters") == ["lbtest"]
    finally:
        server.shutdown()
        server.server_close()
