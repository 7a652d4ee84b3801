"""``collect --every``: a snapshot every so many seconds until stopped, each with the load-report writes the
watcher kept since the one before (``lb/report-writes.jsonl``); a snapshot that cannot be taken is said and the
next one is tried."""

import json
import time

from lb_pipeline.cli import main
from lb_pipeline.ingest.validate import validate_snapshot
from lb_pipeline.snapshots import layout
from lb_pipeline.snapshots.collect import collect
from lb_pipeline.snapshots.report_watch import lines
from tests.test_collect import TOKEN, FakeCluster, _client, source  # noqa: F401 - the shared module fixture


class _Kept:
    """What a ``ReportWatcher`` hands over: the writes since the last call, how many it dropped, its store errors."""

    def __init__(self, writes, dropped=0, errors=()):
        self.batches = [(writes, dropped, list(errors))]

    def take(self):
        return self.batches.pop(0) if self.batches else ([], 0, [])


def _writes(fake: FakeCluster) -> list[dict]:
    report = json.loads(fake.text(layout.local_broker_data(fake.names[0])))
    return [{"zxid": 11, "mtime": 1_796_000_000_000, "broker": fake.ids[0], "version": 4,
             "lastStats": report["lastStats"]},
            {"zxid": 12, "mtime": 1_796_000_005_000, "broker": fake.ids[1], "deleted": True}]


def test_each_snapshot_holds_the_report_writes_kept_since_the_one_before(source, tmp_path):
    fake = FakeCluster(source, {})
    try:
        writes = _writes(fake)
        watcher = _Kept(writes)
        first = collect(_client(fake), tmp_path, progress=False, watcher=watcher)
        time.sleep(1.1)  # the next second: another snapshot directory
        second = collect(_client(fake), tmp_path, progress=False, watcher=watcher)
    finally:
        fake.close()
    assert (first / layout.REPORT_WRITES).read_text() == lines(writes)
    assert (second / layout.REPORT_WRITES).read_text() == ""  # nothing written since: nothing kept twice
    manifest = json.loads((first / layout.MANIFEST).read_text())
    assert manifest["complete"] and manifest["collector"]["sources"]["lb/report-writes"] == {
        "writes": 2, "since": 1_796_000_000_000, "dropped": 0}
    assert validate_snapshot(first) == []


def test_a_gap_in_the_writes_marks_the_part_missing_with_its_reason(source, tmp_path):
    fake = FakeCluster(source, {})
    try:
        snap = collect(_client(fake), tmp_path, progress=False,
                       watcher=_Kept(_writes(fake), dropped=7, errors=["read /loadbalance/brokers: session expired"]))
    finally:
        fake.close()
    manifest = json.loads((snap / layout.MANIFEST).read_text())
    assert manifest["missingParts"] == [layout.REPORT_WRITES]
    reason = manifest["collector"]["errors"][layout.REPORT_WRITES]
    assert "7 earlier report writes dropped" in reason and "session expired" in reason
    assert len((snap / layout.REPORT_WRITES).read_text().splitlines()) == 2  # what was kept still lands


def test_the_command_keeps_collecting_and_a_failed_snapshot_does_not_stop_it(source, tmp_path, capsys):
    fake = FakeCluster(source, {})
    try:
        rc = main(["collect", "--admin-url", f"http://{fake.ids[0]}", "--out", str(tmp_path / "ok"), "--every", "1.1",
                   "--count", "2", "--quiet", "--token", TOKEN, "--timeout", "2"])
    finally:
        fake.close()
    assert rc == 0 and len(list((tmp_path / "ok").glob("*/20*"))) == 2
    rc = main(["collect", "--admin-url", "http://127.0.0.1:9", "--out", str(tmp_path / "down"), "--every", "0.2",
               "--count", "2", "--timeout", "0.3", "--retries", "0"])
    err = capsys.readouterr().err
    assert rc == 3 and err.count("no snapshot this time: cannot read the cluster from http://127.0.0.1:9") == 2
