"""``collect --before-cycle``: a snapshot timed to read the metadata store just before the leader's next shedding
cycle, predicted from the leader's log (Pulsar reschedules the cycle an interval after each run ends)."""

import json
import time

import pytest

from lb_pipeline.errors import LbError
from lb_pipeline.snapshots import layout, leader_cycle
from lb_pipeline.snapshots.collect import collect
from tests.test_collect import FakeCluster, _client, source  # noqa: F401 - the shared module fixture
from tests.test_collect_leader import _line, _store_of

T0 = 1_796_180_000.0  # seconds


def _log(tmp_path, *lines):
    path = tmp_path / "leader.log"
    path.write_text("".join(_line(ts, text) for ts, text in lines))
    return path


def test_the_anchor_is_the_last_line_of_the_last_cycle_that_logged(tmp_path):
    log = _log(tmp_path,
               (T0, "This broker 127.0.0.1:8080 was elected leader"),
               (T0 + 60.01, "Attempting to shed load on 127.0.0.1:8081, which has resource usage 70% above 55%"),
               (T0 + 60.5, "[OverloadShedder] Unloading bundle: t/n/0x00000000_0x80000000 from broker "
                           "127.0.0.1:8081 to dest broker 127.0.0.1:8082"),
               (T0 + 100, "Writing local data to metadata store because maximum change 7% exceeded threshold 5%"),
               (T0 + 110, "Load-manager splitting bundle t/n/0x80000000_0xffffffff and unloading false"))
    anchor = leader_cycle.last_anchor(log, "127.0.0.1:8080")
    assert anchor.ms == int((T0 + 60.5) * 1000) and anchor.what.startswith("unload at ")  # not the report, the split


def test_a_cycle_that_unloaded_several_bundles_is_anchored_at_its_last_line_so_the_prediction_errs_early(tmp_path):
    """Pulsar unloads one bundle after another inside the cycle and reschedules when the last call returns, some
    0.3-2.3 s after its line on a real cluster: anchored at the line, the snapshot comes early, never late."""
    line = "[UniformLoadShedder] Unloading bundle: t/n/0x00000000_0x80000000 from broker a:1 to dest broker b:1"
    log = _log(tmp_path, (T0 - 600, line), (T0, line), (T0 + 0.4, line), (T0 + 0.9, line), (T0 + 1.2, line))
    assert leader_cycle.last_anchor(log, "a:1").ms == int((T0 + 1.2) * 1000)


def test_a_later_election_of_this_broker_restarts_the_schedule_and_another_brokers_does_not(tmp_path):
    log = _log(tmp_path,
               (T0, "[ThresholdShedder] Unloading bundle: t/n/0x00000000_0x80000000 from broker 127.0.0.1:8081 to "
                    "dest broker 127.0.0.1:8082"),
               (T0 + 30, "This broker 127.0.0.1:8080 was elected leader"),
               (T0 + 40, "This broker 127.0.0.1:8081 was elected leader"))
    assert leader_cycle.last_anchor(log, "127.0.0.1:8080").ms == int((T0 + 30) * 1000)
    assert leader_cycle.last_anchor(log, "127.0.0.1:8082").ms == int(T0 * 1000)
    assert leader_cycle.last_anchor(tmp_path / "absent.log", "127.0.0.1:8080") is None
    assert leader_cycle.last_anchor(_log(tmp_path, (T0, "Writing local data to metadata store because x")),
                                    "127.0.0.1:8080") is None


def test_the_plan_leaves_the_budget_and_the_lead_before_the_cycle_or_waits_for_the_next():
    anchor = 1_000_000
    assert leader_cycle.plan(anchor, 60_000, anchor + 10_000, 2_000, 15_000) == (anchor + 43_000, anchor + 60_000)
    # too close to the next cycle for the REST part: the one after
    assert leader_cycle.plan(anchor, 60_000, anchor + 50_000, 2_000, 15_000) == (anchor + 103_000, anchor + 120_000)
    # cycles that logged nothing since: whole intervals on
    assert leader_cycle.plan(anchor, 60_000, anchor + 3_600_000, 2_000, 15_000)[1] == anchor + 3_660_000
    # never the cycle the cluster's previous snapshot was timed for again
    assert leader_cycle.plan(anchor, 60_000, anchor + 10_000, 2_000, 2_000, taken_ms=anchor + 60_000) == (
        anchor + 116_000, anchor + 120_000)
    with pytest.raises(ValueError):
        leader_cycle.next_cycle_ms(anchor, 0, anchor)


@pytest.mark.parametrize("config, expected", [
    ({"loadBalancerSheddingIntervalMinutes": "3"}, 180_000), ({"loadBalancerSheddingIntervalMinutes": " 2 "}, 120_000),
    ({"loadBalancerSheddingIntervalMinutes": "0"}, 60_000), ({"loadBalancerSheddingIntervalMinutes": "1e9"}, 60_000),
    ({"loadBalancerSheddingIntervalMinutes": "-5"}, 60_000), ({}, 60_000), (["not", "a", "map"], 60_000), (None, 60_000)])
def test_the_interval_is_the_leaders_or_pulsars_default(config, expected):
    assert leader_cycle.interval_ms(config)[0] == expected


def test_the_budget_is_measured_on_the_newest_timed_snapshot_and_hostile_manifests_are_ignored(tmp_path):
    assert leader_cycle.measured_budget(tmp_path / "none") == leader_cycle.DEFAULT_BUDGET_MS
    for name, rest in [("2026-12-02T03-00-00Z", 4000), ("2026-12-02T03-01-00Z", "6000"),
                       ("2026-12-02T03-02-00Z", -1), ("2026-12-02T03-03-00Z", 10**12)]:
        (tmp_path / name).mkdir()
        (tmp_path / name / layout.MANIFEST).write_text(json.dumps({"collector": {"sources": {"leaderCycle": {"restMs": rest}}}}))
    (tmp_path / ".2026-12-02T03-04-00Z.tmp").mkdir()  # a snapshot being written is no snapshot
    (tmp_path / "2026-12-02T03-05-00Z").mkdir()  # no manifest
    assert leader_cycle.measured_budget(tmp_path) == 4000 * 3 // 2 + 1000
    assert leader_cycle.previous_cycle(tmp_path) is None  # no manifest says which cycle it was timed for


def test_collect_reads_the_store_just_before_the_predicted_cycle(source, tmp_path, monkeypatch):
    monkeypatch.setattr(leader_cycle, "DEFAULT_BUDGET_MS", 1000)
    fake = FakeCluster(source, {})
    leader = fake.ids[0]
    now = time.time()
    log = _log(tmp_path, (now - 57, f"Attempting to shed load on {fake.ids[1]}, which has resource usage 70%"))
    try:
        with pytest.raises(LbError, match="--before-cycle needs"):
            collect(_client(fake), tmp_path / "landing", progress=False, store=_store_of(fake), before_cycle_s=1.0)
        snap = collect(_client(fake), tmp_path / "landing", progress=False, store=_store_of(fake),
                       broker_logs={leader: str(log)}, before_cycle_s=1.0)
    finally:
        fake.close()
    manifest = json.loads((snap / layout.MANIFEST).read_text())
    cycle = manifest["collector"]["sources"]["leaderCycle"]
    expected = int((now - 57) * 1000) + 60_000
    assert cycle["leader"] == leader and cycle["expectedMs"] == expected and cycle["intervalMs"] == 60_000
    assert cycle["readAtMs"] == expected - 1000 <= cycle["readMs"] < expected  # read in the last second before it
    assert expected - 1000 - 1000 <= manifest["snapshotTimestampMs"] <= cycle["readMs"]  # started a budget before
    assert cycle["restMs"] >= 0 and manifest["complete"]
    # the load reports, which change fastest, last: a quarter of a second before the cycle
    assert cycle["readMs"] <= expected - 250 <= cycle["reportsReadMs"] < expected


def test_without_the_leaders_log_the_snapshot_is_taken_at_once_and_not_timed(source, tmp_path):
    fake = FakeCluster(source, {})
    other = tmp_path / "other.log"
    other.write_text(_line(time.time() - 10, "This broker x:1 was elected leader"))
    try:
        started = time.time()
        snap = collect(_client(fake), tmp_path / "landing", progress=False, store=_store_of(fake),
                       broker_logs={fake.ids[1]: str(other)}, before_cycle_s=2.0)
    finally:
        fake.close()
    assert time.time() - started < 30
    assert "leaderCycle" not in json.loads((snap / layout.MANIFEST).read_text())["collector"]["sources"]


def test_a_cycle_the_leader_logs_while_the_collector_waits_moves_the_snapshot_to_the_new_schedule(
        source, tmp_path, monkeypatch):
    """Seen on a real cluster: a collector started as a cycle began read the log before the cycle's lines were
    written, and timed its snapshot 7 s early. The log is read again while waiting."""
    import threading

    monkeypatch.setattr(leader_cycle, "DEFAULT_BUDGET_MS", 1000)
    fake = FakeCluster(source, {})
    leader = fake.ids[0]
    now = time.time()
    log = _log(tmp_path, (now - 57, f"Attempting to shed load on {fake.ids[1]}, which has resource usage 70%"))
    later = now - 55  # a cycle whose lines reach the log half a second into the wait
    writer = threading.Timer(0.5, lambda: log.open("a").write(
        _line(later, f"Attempting to shed load on {fake.ids[1]}, which has resource usage 71%")))
    writer.start()
    try:
        snap = collect(_client(fake), tmp_path / "landing", progress=False, store=_store_of(fake),
                       broker_logs={leader: str(log)}, before_cycle_s=1.0)
    finally:
        writer.cancel()
        fake.close()
    cycle = json.loads((snap / layout.MANIFEST).read_text())["collector"]["sources"]["leaderCycle"]
    assert cycle["expectedMs"] == int(later * 1000) + 60_000 and cycle["anchor"].endswith(str(int(later * 1000)))
    assert cycle["readAtMs"] <= cycle["readMs"] < cycle["expectedMs"]


def test_the_leaders_cycles_are_its_logged_ones_and_between_them_whole_intervals_from_the_last_one_or_the_election():
    minute = 60_000
    marks = [(0, "leader"), (0, "leader"),  # the same line in two snapshots' copies of the log
             (5 * minute + 1_000, "shed-attempt"), (5 * minute + 3_000, "unload"),  # one cycle, two lines
             (5 * minute + 20_000, "report-written"),  # not a cycle
             (8 * minute + 3_500, "unload")]
    got = leader_cycle.logged_cycles(marks, minute, -150_000, 10 * minute)
    assert got == [-2 * minute, -minute,  # before the election: whole intervals back from it
                   minute, 2 * minute, 3 * minute, 4 * minute,  # the election plus whole intervals
                   5 * minute + 1_000,  # the logged cycle, at its first line
                   6 * minute + 3_000, 7 * minute + 3_000,  # its last line plus whole intervals
                   8 * minute + 3_500, 9 * minute + 3_500]  # until the next logged cycle, which drifted
    assert leader_cycle.logged_cycles([(0, "report-written"), (9, "split")], minute, 0, 10 * minute) is None
    with pytest.raises(ValueError, match="shedding interval 0 ms"):
        leader_cycle.logged_cycles(marks, 0, 0, 1)
