"""Names Pulsar accepts reach the lake as they are: a ``:`` in a namespace round-trips through the bundle-data
path, a name longer than a file name is written under a shortened one (the JSON keeps the name), and a cluster
name no folder can hold is one clear line (each had been refused by ingest or ended ``collect`` in a traceback)."""

import json
import shutil

import pytest

from lb_pipeline.errors import LbError
from lb_pipeline.ingest.files import parse_file
from lb_pipeline.ingest.snapshot_check import check_snapshot
from lb_pipeline.ingest.tables import TABLES
from lb_pipeline.snapshots import layout
from lb_pipeline.snapshots.admin_client import AdminClient
from lb_pipeline.snapshots.collect import collect
from lb_pipeline.snapshots.load import load_snapshot
from tests.test_collect_hostile import OK, RawServer

REAL = "tests/fixtures/real-runs/overload/landing/lbtest/2026-12-02T03-07-38Z"
LONG = "ns-" + "n" * 297  # a valid namespace name of 300 characters


def test_a_namespace_with_a_colon_keeps_its_bundle_data_through_the_path(tmp_path):
    snap = shutil.copytree(REAL, tmp_path / "landing" / "lbtest" / "2026-12-02T03-07-38Z")
    source = next((snap / "lb" / "bundle-data" / "lb" / "ns-c16").iterdir())
    bundle = f"umbrella/clicks:v2/{source.stem}"
    target = snap / layout.bundle_data(bundle)
    target.parent.mkdir(parents=True)
    shutil.copy(source, target)
    assert "clicks=3Av2" in str(target) and ":" not in str(target.relative_to(tmp_path))
    assert check_snapshot(str(snap)).quarantined == []  # the landing's file-name rule takes it
    rows, bad = parse_file(TABLES["bundle_data"], f"file:{target}", target.read_bytes(), None)
    assert not bad and {r["bundle"] for r in rows} == {bundle}
    assert bundle in load_snapshot(snap, with_topics=False).bundle_data


def test_names_are_encoded_reversibly_and_old_names_read_as_they_are():
    for name in ("a:b", "x=3A", "k=v:1", "plain", "0x00000000_0x10000000"):
        assert layout.name_of(layout.file_name(name)) == name
        assert all(c.isalnum() or c in "._=-" for c in layout.file_name(name))
    assert layout.name_of("ns-c16") == "ns-c16"


def _admin(namespaces, cluster="c1"):
    def answer(path):
        documents = {"/admin/v2/clusters": [cluster], f"/admin/v2/brokers/{cluster}": [broker[0]],
                     "/admin/v2/brokers/leaderBroker": {"brokerId": broker[0]}, "/admin/v2/tenants": ["t"],
                     "/admin/v2/namespaces/t": namespaces, "/admin/v2/brokers/configuration/values": {}}
        if path in documents:
            return OK + b"\r\n" + json.dumps(documents[path]).encode()
        if path.endswith("/bundles"):
            return OK + b"\r\n" + b'{"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1}'
        if path.endswith("/antiAffinity") or "/clusters/" in path:
            return b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"
        return OK + b"\r\n{}"

    server = RawServer(answer)
    broker = [server.url.split("//")[1]]
    return server


def test_a_namespace_longer_than_a_file_name_is_collected_and_read_by_its_own_name(tmp_path):
    server = _admin([f"t/{LONG}", "t/short"])
    try:
        snap = collect(AdminClient(server.url, timeout=2, retries=0), tmp_path, progress=False)
    finally:
        server.close()
    manifest = json.loads((snap / layout.MANIFEST).read_text())
    assert not any("namespaces" in p for p in manifest["missingParts"])
    (long_file,) = [p for p in (snap / "namespaces" / "t").iterdir() if p.name != "short.json"]
    assert len(long_file.name.encode()) <= 200
    rows, bad = parse_file(TABLES["namespaces"], f"file:{long_file}", long_file.read_bytes(), None)
    assert not bad and rows[0]["namespace"] == f"t/{LONG}"


def test_a_cluster_name_no_folder_can_hold_is_one_clear_line(tmp_path):
    server = _admin([], cluster="c" * 300)
    try:
        with pytest.raises(LbError, match="cannot write a snapshot of cluster 'c+' under .*: File name too long"):
            collect(AdminClient(server.url, timeout=2, retries=0), tmp_path, progress=False)
    finally:
        server.close()
