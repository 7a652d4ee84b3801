"""``lb-pipeline collect`` with the leader's inputs: the metadata store's ``/loadbalance`` copies and the brokers'
load-balancer log lines (a dictionary-backed store stands in for ZooKeeper; the real runs in tests/fixtures were
collected from a real one)."""

import json
import time

import pytest

from lb_pipeline.errors import LbError
from lb_pipeline.ingest.validate import validate_snapshot
from lb_pipeline.snapshots import layout
from lb_pipeline.formats.events import line_time_ms
from lb_pipeline.snapshots.broker_logs import copy_events
from lb_pipeline.snapshots.collect import collect
from lb_pipeline.snapshots.metadata_store import Node, StoreError, StoreUrl, read_leader_inputs
from tests.test_collect import FakeCluster, _client, source  # noqa: F401 - the shared module fixture


class DictStore:
    """``children``/``get`` over a dict of node path → bytes, as ``ZooKeeperStore`` answers."""

    url = StoreUrl("127.0.0.1:2181")

    def __init__(self, nodes: dict[str, bytes]):
        self.nodes = nodes

    def children(self, path):
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix):].split("/")[0] for p in self.nodes if p.startswith(prefix)})

    def get(self, path):
        value = self.nodes.get(path)
        if isinstance(value, Exception):
            raise value
        return None if value is None else Node(value, 1_796_175_000_000 + len(path))


def _store_of(fake: FakeCluster) -> DictStore:
    """The leader's copies of the fake cluster's source snapshot, under the brokers' new ids, each report marked."""
    nodes = {"/loadbalance/leader": json.dumps({"serviceUrl": f"http://{fake.ids[1]}", "brokerId": fake.ids[1]}).encode()}
    for name, new in zip(fake.names, fake.ids):
        report = json.loads(fake.text(layout.local_broker_data(name)))
        report["lastUpdate"] = 123  # the leader's copy is older than what the REST API answers
        nodes[f"/loadbalance/brokers/{new}"] = json.dumps(report).encode()
        nodes[f"/loadbalance/broker-time-average/{new}"] = fake.text(layout.broker_time_average(name)).encode()
    for path in sorted((fake.source / "lb" / "bundle-data").rglob("*.json")):
        rel = path.relative_to(fake.source / "lb" / "bundle-data").with_suffix("")
        nodes[f"/loadbalance/bundle-data/{rel}"] = path.read_bytes()
    return nodes and DictStore(nodes)


def test_the_leaders_copies_replace_the_rest_reports_and_the_snapshot_stays_valid(source, tmp_path):
    fake = FakeCluster(source, {})
    store = _store_of(fake)
    try:
        snap = collect(_client(fake), tmp_path, progress=False, store=store)
    finally:
        fake.close()
    manifest = json.loads((snap / layout.MANIFEST).read_text())
    assert manifest["complete"] and manifest["notCollected"] == []
    assert manifest["collector"]["sources"]["lb/brokers"] == "metadata-store"
    assert manifest["collector"]["sources"]["bundleDataWrittenMs"] == 1_796_175_000_000 + max(
        len(p) for p in store.nodes if p.startswith("/loadbalance/bundle-data/"))  # the newest write
    reports = [json.loads((snap / layout.local_broker_data(b)).read_text()) for b in fake.ids]
    assert {r["lastUpdate"] for r in reports} == {123}
    bundle_data = sorted(p.relative_to(snap).as_posix() for p in (snap / "lb" / "bundle-data").rglob("*.json"))
    source_bundle_data = sorted(p.relative_to(source).as_posix() for p in (source / "lb" / "bundle-data").rglob("*.json"))
    assert bundle_data == source_bundle_data and bundle_data
    assert all((snap / layout.broker_time_average(b)).is_file() for b in fake.ids)
    assert validate_snapshot(snap) == []


def test_a_bad_node_is_a_missing_part_named_by_node_and_the_rest_is_kept(source, tmp_path):
    fake = FakeCluster(source, {})
    store = _store_of(fake)
    bundles = sorted(p for p in store.nodes if p.startswith("/loadbalance/bundle-data/"))
    store.nodes[bundles[0]] = b'{"shortTermData": {"msgRateIn": NaN}}'
    store.nodes[bundles[1]] = StoreError(f"read {bundles[1]}: ConnectionLoss")
    store.nodes["/loadbalance/bundle-data/t/ns/../../etc"] = b"{}"  # a node name that is no bundle
    store.nodes[f"/loadbalance/brokers/{fake.ids[2]}"] = json.dumps(  # the extensible load manager's registration
        {"webServiceUrl": "http://x", "brokerVersion": "4.0.7", "loadManagerClassName": "Extensible"}).encode()
    try:
        snap = collect(_client(fake), tmp_path, progress=False, store=store)
    finally:
        fake.close()
    manifest = json.loads((snap / layout.MANIFEST).read_text())
    errors = manifest["collector"]["errors"]
    first, second = (layout.bundle_data(b.removeprefix("/loadbalance/bundle-data/")) for b in bundles[:2])
    assert "not a JSON document" in errors[first] and "ConnectionLoss" in errors[second]
    assert not (snap / first).exists() and (snap / layout.bundle_data(bundles[2].split("bundle-data/")[1])).is_file()
    assert any("not a tenant, namespace or bundle name" in why for why in errors.values())
    assert manifest["collector"]["sources"]["extensibleLookupData"] == [fake.ids[2]]
    assert json.loads((snap / layout.local_broker_data(fake.ids[2])).read_text())["lastUpdate"] != 123  # REST kept
    assert not any(p.name == "etc" for p in tmp_path.rglob("*"))


def test_the_bundles_resource_quotas_are_collected_named_by_bundle_and_land_in_bronze(source, tmp_path, spark):
    """``/loadbalance/resource-quota/<tenant>/<ns>/<range>`` (an admin's ``resource-quotas set``): what the leader
    starts a bundle's averages from without stored BundleData. The default quota and a node that names no bundle
    are not bundle quotas; ingest lands each snapshot's quotas in ``bronze/resource_quotas``."""
    from lb_pipeline.ingest.bronze import ingest_day
    from lb_pipeline.spark.lake import Lake

    fake = FakeCluster(source, {})
    store = _store_of(fake)
    quota = {"msgRateIn": 400.0, "msgRateOut": 80.0, "bandwidthIn": 9000.0, "bandwidthOut": 7000.0, "memory": 64.0,
             "dynamic": False}
    store.nodes["/loadbalance/resource-quota/default"] = json.dumps({**quota, "msgRateIn": 1.0}).encode()
    store.nodes["/loadbalance/resource-quota/acme/orders/0x00000000_0x40000000"] = json.dumps(quota).encode()
    store.nodes["/loadbalance/resource-quota/acme/orders/not-a-range!"] = b"{}"
    try:
        snap = collect(_client(fake), tmp_path / "landing", progress=False, store=store)
    finally:
        fake.close()
    manifest = json.loads((snap / layout.MANIFEST).read_text())
    assert manifest["collector"]["sources"]["lb/resource-quota"] == "metadata-store"
    written = sorted(p.relative_to(snap).as_posix() for p in (snap / "lb" / "resource-quota").rglob("*.json"))
    assert written == [layout.resource_quota("acme/orders/0x00000000_0x40000000")]
    assert any("not-a-range" in k for k in manifest["collector"]["errors"])
    assert [(f.field, "not-a-range" in f.message) for f in validate_snapshot(snap)] == [("complete", True)]
    lake = Lake(str(tmp_path / "lake"))
    ingest_day(spark, lake, str(snap.parent.parent), snap.name[:10], tables=["resource_quotas"])
    (row,) = lake.read(spark, "bronze", "resource_quotas").collect()
    assert (row.bundle, row.msg_rate_in, row.bandwidth_out, row.dynamic) == (
        "acme/orders/0x00000000_0x40000000", 400.0, 7000.0, False)


def test_the_leader_comes_from_the_store_when_the_admin_api_names_none():
    store = DictStore({"/loadbalance/leader": b'{"serviceUrl": "http://10.0.0.7:8080"}'})
    assert read_leader_inputs(store, []).leader == "10.0.0.7:8080"
    assert read_leader_inputs(DictStore({"/loadbalance/leader": b'{"brokerId": "../x"}'}), []).leader is None


@pytest.mark.parametrize("url, hosts, chroot", [("zk:127.0.0.1:2181", "127.0.0.1:2181", ""),
                                                ("zk:a:2181,b:2181/pulsar/", "a:2181,b:2181", "/pulsar"),
                                                ("zookeeper://zk-0.zk:2181", "zk-0.zk:2181", "")])
def test_metadata_store_urls_read_as_pulsar_spells_them(url, hosts, chroot):
    assert StoreUrl.parse(url) == StoreUrl(hosts, chroot)


@pytest.mark.parametrize("url", ["etcd:http://127.0.0.1:2379", "zk:", "zk:host", "zk:host:port"])
def test_other_metadata_stores_and_malformed_urls_are_refused_by_name(url):
    with pytest.raises(LbError, match="--metadata-store"):
        StoreUrl.parse(url)


LOG = """\
2026-12-02T01:40:00.100Z [main] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - [OverloadShedder] Unloading bundle: lb/ns-a4/0x00000000_0xffffffff from broker 127.0.0.1:8080 to dest broker 127.0.0.1:8081
2026-12-02T01:40:30.000Z [main] INFO  o.a.p.b.PulsarService - unrelated line
2026-12-02T01:40:30.500Z [pulsar-2-1] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - 2 brokers being considered for assignment of lb/ns-a4/0x00000000_0xffffffff
2026-12-02T01:41:00,500+0100 [lb] INFO  org.apache.pulsar.broker.loadbalance.impl.BundleSplitterTask - Load-manager splitting bundle lb/ns-c16/0x00000000_0x10000000
\tat a.stack.Trace(Unloading.java:1)
2026-12-02T01:42:00.000Z [lb] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - [OverloadShedder] Unloading bundle: lb/ns-b8/0x00000000_0xffffffff from broker 127.0.0.1:8081 to dest broker 127.0.0.1:8080
"""


def test_log_times_are_read_in_pulsars_patterns():
    assert line_time_ms("2026-12-02T01:40:00.100Z x") == 1796175600100
    assert line_time_ms("2026-12-02T01:41:00,500+0100 x") == 1796175600100 - 3600_000 + 60_400
    assert line_time_ms("2026-12-02 01:40:00.100 x") == 1796175600100
    assert line_time_ms("\tat a.stack.Trace") is None


def test_only_load_balancer_lines_since_the_previous_snapshot_are_kept(tmp_path):
    log = tmp_path / "broker.log"
    log.write_text(LOG)
    dest = tmp_path / "kept.log"
    since, until = line_time_ms("2026-12-02T00:45:00.000Z"), line_time_ms("2026-12-02T01:41:00.000Z")
    assert copy_events(log, dest, since, until) == 2  # the split at 00:41 UTC is before `since`
    assert dest.read_text().splitlines() == [LOG.splitlines()[0], LOG.splitlines()[2]]  # a lookup's placement too


def _line(ts: float, text: str) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts * 1000) % 1000:03d}Z"
    return f"{stamp} [lb] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - {text}\n"


def test_collect_keeps_each_log_line_once_across_snapshots(source, tmp_path):
    log = tmp_path / "broker.log"
    fake = FakeCluster(source, {})
    now = time.time()
    try:
        log.write_text(_line(now - 30, "[OverloadShedder] Unloading bundle: t/n/0x00000000_0xffffffff")
                       + _line(now + 3600, "Unloading bundle written after the snapshot"))
        first = collect(_client(fake), tmp_path / "landing", progress=False, broker_logs={fake.ids[0]: str(log)})
        time.sleep(1.1)  # another second: another snapshot folder
        with log.open("a") as f:
            f.write(_line(time.time() - 0.5, "Load-manager splitting bundle t/n/0x00000000_0xffffffff"))
        quiet = tmp_path / "quiet.log"
        quiet.write_text(_line(now - 7200, "Unloading bundle long before"))
        second = collect(_client(fake), tmp_path / "landing", progress=False,
                         broker_logs={fake.ids[0]: str(log), fake.ids[1]: str(tmp_path / "absent.log"),
                                      fake.ids[2]: str(quiet)})
    finally:
        fake.close()
    rel = layout.broker_log(fake.ids[0])
    assert [line.split(" - ")[1] for line in (first / rel).read_text().splitlines()] == [
        "[OverloadShedder] Unloading bundle: t/n/0x00000000_0xffffffff"]
    assert [line.split(" - ")[1] for line in (second / rel).read_text().splitlines()] == [
        "Load-manager splitting bundle t/n/0x00000000_0xffffffff"]  # each line once; none from the future
    manifest = json.loads((second / layout.MANIFEST).read_text())
    assert layout.broker_log(fake.ids[1]) in manifest["missingParts"]
    assert manifest["collector"]["sources"]["logs"] == {fake.ids[0]: 1, fake.ids[2]: 0}
    assert not (second / layout.broker_log(fake.ids[2])).exists()  # no line, no (empty) file
    assert manifest["collector"]["sources"]["lb/brokers"] == "admin-api"  # fresh reports: of the topics' cycle
    assert validate_snapshot(first) == []  # the log kept lands as bronze/lb_events rows


def test_a_hostile_broker_log_is_read_line_by_line_and_cut(tmp_path):
    """A log is the broker's to write: a megabyte on one line, bytes that are not UTF-8, NULs and a forged time are
    kept as (cut) text or left out, never a crash, and never more than MAX_LINE of one line."""
    from lb_pipeline.snapshots.broker_logs import MAX_LINE

    now = time.time()
    log = tmp_path / "broker.log"
    log.write_bytes(_line(now - 5, "Unloading bundle: " + "x" * 1_000_000).encode()
                    + b"\xff\xfe\x00 Unloading bundle: binary\n"
                    + _line(now - 4, "[OverloadShedder] Unloading bundle: t/n/0x00000000_0xffffffff from broker "
                                     "a:1 to dest broker b:1").encode()
                    + b"9999-99-99T99:99:99Z Unloading bundle: forged time\n")
    dest = tmp_path / "kept.log"
    assert copy_events(log, dest, None, int(now * 1000)) == 2
    kept = dest.read_text().splitlines()
    assert len(kept[0]) == MAX_LINE and kept[1].endswith("to dest broker b:1")
