"""Many brokers: asked several at a time, within one deadline for the snapshot, with progress lines a log file
can hold (10,000 brokers asked one after another had taken 46 minutes, silently when stderr was no terminal)."""

import json
import time

import pytest

from lb_pipeline.snapshots import collect as collect_module
from lb_pipeline.snapshots import layout
from lb_pipeline.snapshots.admin_client import AdminClient
from tests.test_collect_hostile import OK, RawServer

SLOW = 0.4  # seconds each broker takes per request


@pytest.fixture
def cluster():
    """An admin server and 12 brokers, each answering its own reports after ``SLOW`` seconds."""
    brokers = [RawServer(lambda path: (time.sleep(SLOW), OK + b"\r\n{}")[1]) for _ in range(12)]
    ids = [b.url.split("//")[1] for b in brokers]

    def admin(path):
        documents = {"/admin/v2/clusters": ["c1"], "/admin/v2/brokers/c1": ids,
                     "/admin/v2/brokers/leaderBroker": {"brokerId": ids[0]}, "/admin/v2/tenants": [],
                     "/admin/v2/brokers/configuration/values": {}}
        if path in documents:
            return OK + b"\r\n" + json.dumps(documents[path]).encode()
        return b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

    server = RawServer(admin)
    yield AdminClient(server.url, timeout=5, retries=0), ids
    for s in [server, *brokers]:
        s.close()


def _manifest(snap):
    return json.loads((snap / layout.MANIFEST).read_text())


def test_brokers_are_asked_several_at_a_time(cluster, tmp_path):
    client, ids = cluster
    start = time.monotonic()
    snap = collect_module.collect(client, tmp_path, progress=False, parallel=6)
    took = time.monotonic() - start
    assert took < 12 * 4 * SLOW / 3  # one after another: 19 s
    manifest = _manifest(snap)
    assert manifest["complete"] and manifest["brokers"] == ids
    assert all((snap / layout.topic_stats(b)).is_file() for b in ids)


def test_brokers_not_reached_within_the_snapshots_deadline_are_missing_with_the_reason(cluster, tmp_path):
    client, ids = cluster
    snap = collect_module.collect(client, tmp_path, progress=False, parallel=1, deadline_s=2.5)
    manifest = _manifest(snap)
    late = [b for b in ids if layout.topic_stats(b) in manifest["missingParts"]]
    assert not manifest["complete"] and 0 < len(late) < len(ids) and late == ids[-len(late):]
    assert "the snapshot's deadline (2.5 s, --snapshot-deadline) had passed" in \
        manifest["collector"]["errors"][layout.local_broker_data(late[0])]


def test_progress_off_a_terminal_is_a_line_now_and_then(cluster, tmp_path, capsys, monkeypatch):
    client, ids = cluster
    monkeypatch.setattr(collect_module, "PROGRESS_EVERY_S", 1.0)
    collect_module.collect(client, tmp_path, progress="periodic", parallel=2)
    lines = capsys.readouterr().err.splitlines()
    assert 2 <= len(lines) < len(ids) and lines[-1] == f"[{len(ids)}/{len(ids)}] brokers read, 0 part(s) missing so far"
