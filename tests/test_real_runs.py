"""The recorded real runs (tests/fixtures/real-runs, made by tests/fixtures/record-real.sh): three brokers of a real
Pulsar 4.0.7 cluster under one workload and one configuration, one run per shedding strategy, a snapshot a minute
with the metadata store's /loadbalance data and the leader's log, and a last snapshot after broker c was stopped.
Healthy real data: the checker finds nothing in it, and what the leader logged agrees with what the snapshots show."""

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from lb_pipeline.ingest import moved_topics
from lb_pipeline.ingest.files import parse_file
from lb_pipeline.ingest.tables import TABLES
from lb_pipeline.ingest.validate import validate_snapshot
from lb_pipeline.snapshots import layout

RUNS = Path(__file__).parent / "fixtures" / "real-runs"
RECORDINGS = sorted(p.parent for p in RUNS.glob("*/recording.json"))
# records of the same kind, every report write beside them (test_leader_samples)
PROBED = [RUNS.parent / "real-probe", RUNS.parent / "real-probe-burst"]


def snapshots(run: Path) -> list[Path]:
    return sorted(p.parent for p in run.glob("landing/*/*/manifest.json"))


def events(snapshot: Path) -> list[dict]:
    manifest = json.loads((snapshot / layout.MANIFEST).read_text())
    rows = []
    for log in sorted((snapshot / layout.LOGS).glob("*.log")):
        good, bad = parse_file(TABLES["lb_events"], f"file:{log}", log.read_bytes(),
                               manifests={f"file:{snapshot}": manifest["brokers"]})
        assert bad == [], bad
        rows += good
    return rows


def test_three_strategies_were_recorded_with_the_leaders_inputs():
    shedders = {json.loads((r / "recording.json").read_text())["shedder"] for r in RECORDINGS}
    assert shedders >= {"overload", "threshold", "uniform"}
    assert all(len(snapshots(RUNS / name)) >= 15 for name in ("overload", "threshold", "uniform"))  # 15 min or more
    for run in RECORDINGS:
        snaps = snapshots(run)
        # a snapshot a minute for every minute of traffic (stopped-busy-overload: 8, around one broker's loss)
        assert len(snaps) >= int(json.loads((run / "recording.json").read_text())["minutes"]), run.name
        for snap in snaps:
            manifest = json.loads((snap / layout.MANIFEST).read_text())
            assert manifest["collector"]["sources"]["lb/brokers"] == "metadata-store" and manifest["notCollected"] == []
            if not _before_bundle_data(run, snap):
                assert list((snap / "lb" / "bundle-data").rglob("*.json")), snap.name


def _before_bundle_data(run: Path, snap: Path) -> bool:
    """A snapshot of a record made from the start (``FROM_START=1``) taken before the leader could write any
    BundleData: before the traffic, or less than two minutes into it (it writes them every
    ``loadBalancerResourceQuotaUpdateIntervalMinutes``, 1, once bundles carry load)."""
    recording = json.loads((run / "recording.json").read_text())
    started = datetime.strptime(recording["traffic"]["startedAt"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    taken = datetime.strptime(snap.name, layout.TS_FORMAT).replace(tzinfo=timezone.utc)
    return recording.get("fromStart") == "1" and taken < started + timedelta(minutes=2)


TIMED = [r for r in RECORDINGS if json.loads((r / "recording.json").read_text()).get("beforeCycleSeconds")]
CYCLE_KINDS = {"unload", "unload-no-broker", "unload-same-owner", "shed-attempt", "shed-sole-bundle"}


@pytest.mark.parametrize("run", TIMED, ids=lambda p: p.name)
def test_a_timed_snapshot_reads_the_leaders_inputs_just_before_the_cycle_the_leader_then_runs(run):
    """collect --before-cycle on a real cluster: no shedding cycle the leader logged falls between a snapshot's start
    and its metadata-store read, and every cycle that logged within an interval after a read came within seconds
    of it (the prediction errs early by the unloads' own time, never late)."""
    snaps = snapshots(run)
    cycles = sorted(int(e["event_ts"].timestamp() * 1000) for s in snaps for e in events(s) if e["kind"] in CYCLE_KINDS)
    followed = 0
    for snap in snaps:
        manifest = json.loads((snap / layout.MANIFEST).read_text())
        cycle = manifest["collector"]["sources"]["leaderCycle"]
        start, read, lead = manifest["snapshotTimestampMs"], cycle["readMs"], cycle["expectedMs"] - cycle["readAtMs"]
        assert start <= read <= cycle["expectedMs"], (snap.name, cycle)
        assert not [t for t in cycles if start < t <= read], snap.name  # no cycle overtook the snapshot
        after = [t - read for t in cycles if read < t < read + cycle["intervalMs"]]
        if after:
            assert lead - 100 <= min(after) <= lead + 5000, (snap.name, min(after))
            followed += 1
    # a strategy that logs only the cycles that shed (OverloadShedder, 2 in stopped-overload) has fewer to follow
    logged = sum(1 for a, b in zip([None, *cycles], cycles) if a is None or b - a > 10_000)  # a cycle's lines: ms apart
    assert followed >= min(3, logged), f"{run.name}: only {followed} timed snapshots followed by a logged cycle"


# A snapshot the collector took while the leader moved a bundle: two of its topics are in both brokers' stats.
MOVED_WHILE_COLLECTED = ("uniform", "2026-12-02T02-51-43Z")


@pytest.mark.parametrize("run", [*RECORDINGS, *PROBED], ids=lambda p: p.name)
def test_validate_snapshot_finds_nothing_in_healthy_real_snapshots(run):
    """Healthy real snapshots: nothing to say. One kind of snapshot is not whole, and says only that: taken while a
    broker was stopping (writes-threshold 01:30:56, by the collector running through the record), still listed by
    the cluster but refusing connections, and gone from the next snapshot."""
    snaps = snapshots(run)
    findings = {snap.name: [str(f) for f in validate_snapshot(snap)] for snap in snaps}
    for i, snap in enumerate(snaps):
        manifest = json.loads((snap / layout.MANIFEST).read_text())
        if manifest["complete"] or i + 1 == len(snaps):
            continue
        gone = set(manifest["brokers"]) - set(json.loads((snaps[i + 1] / layout.MANIFEST).read_text())["brokers"])
        stems = {layout.broker_file_stem(b) for b in gone}
        assert gone and all(Path(p).stem in stems and "Connection refused" in manifest["collector"]["errors"][p]
                            for p in manifest["missingParts"]), snap.name
        assert [f for f in findings.pop(snap.name) if "snapshot is incomplete" not in f] == [], snap.name
    assert {name: f for name, f in findings.items() if f} == {}
    last = json.loads((snapshots(run)[-1] / layout.MANIFEST).read_text())
    domains = json.loads((snapshots(run)[-1] / layout.FAILURE_DOMAINS).read_text())
    configured = {b for d in domains.values() for b in d["brokers"]}
    assert configured - set(last["brokers"]), "the last snapshot is taken with a configured broker stopped"


@pytest.mark.parametrize("run", [*RECORDINGS, *PROBED], ids=lambda p: p.name)
def test_each_logged_unload_moved_a_bundle_its_source_owned_to_a_live_broker(run):
    """The leader's log and the snapshots tell one story: an unload logged between two snapshots is of a bundle
    its source broker owned at the one before, or whose report, as the leader held it then, still listed it (the
    leader sheds from reports as last written: writes-uniform's leader shed two bundles "from" a broker whose report,
    51 s old, still listed them after they had moved), to a broker the one after lists."""
    snaps = snapshots(run)
    owners = [{b: s.stem for s in (snap / "ownership").glob("*.json") for b in json.loads(s.read_text())}
              for snap in snaps]
    live = [set(json.loads((snap / layout.MANIFEST).read_text())["brokers"]) for snap in snaps]
    checked = 0
    for i in range(1, len(snaps)):
        for e in (e for e in events(snaps[i]) if e["kind"] == "unload"):
            earlier = owners[i - 1].get(e["bundle"])
            if earlier is None:  # the bundle came into being (a split) after the snapshot before
                continue
            if layout.broker_from_file_stem(earlier) != e["from_broker"]:
                held = snaps[i - 1] / "lb" / "brokers" / f"{layout.broker_file_stem(e['from_broker'])}.json"
                assert e["bundle"] in json.loads(held.read_text()).get("lastStats", {}), e
            assert e["to_broker"] in live[i] | live[i - 1] and e["to_broker"] != e["from_broker"]
            checked += 1
    assert checked, f"{run.name}: no unload to check"


def test_the_nightly_replay_is_scored_against_the_unloads_the_leader_logged(real_night):
    """The nightly job on a recorded ThresholdShedder run (writes-threshold: 18 minutes, `lb/ns-c16` moved by hand
    five times, every load report the brokers wrote kept by the collector running through it; scored untouched when
    recorded), launched by the Dagster daemon's landing sensor as in production (beside the suite,
    tests/background.py): the run succeeds, every table lands, nothing is quarantined, the leader's averages are
    replayed from every report write (not estimated), and the report scores the replay against the leader's log,
    not the ownership changes (which also hold the bundles moved by hand): 6 of the 6 logged unloads predicted,
    6 of 6 predictions confirmed, each to the logged broker (docs/validation.md)."""
    import html
    import re

    assert real_night.code == 0, real_night.output[-3000:]
    assert real_night.launched_by == "landing_sensor"
    # the run before it was killed during bronze: run monitoring failed it, naming its process, and the queue moved
    assert real_night.killed["status"] == "FAILURE"
    assert f"the run's process (pid {real_night.killed['pid']}) is gone" in real_night.killed["reason"]
    run = RUNS / "writes-threshold"
    (report,) = (real_night.reports / "lbtest").glob("20*.html")
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", report.read_text())).split())
    snaps = snapshots(run)
    assert (f"The leader's bundle averages (BundleData) were replayed from every load report the brokers wrote, at "
            f"each of the {len(snaps)} snapshots") in text
    m = re.search(r"Replay of ThresholdShedder against the unloads the leader logged between snapshots: (\d+) unload\(s\) "
                  r"predicted, (\d+) unload\(s\) logged; (\d+) prediction\(s\) confirmed \((\d+) to the logged broker\): "
                  r"precision ([\d.]+|–)%?, recall ([\d.]+|–)%?", text)
    assert m, text[text.find("Replay of"):][:600]
    logged_after_first = sum(1 for s in snaps[1:] for e in events(s) if e["kind"] == "unload")
    assert int(m.group(2)) == logged_after_first > 0
    predicted, logged, confirmed, to_broker = (int(m.group(k)) for k in (1, 2, 3, 4))
    assert (predicted, logged, confirmed, to_broker) == (6, 6, 6, 6)  # measured when recorded
    # the anchored simulation too, on the leader's log (not the 20 changes of owner, 14 of them by hand) and the
    # averages replayed from every write
    m = re.search(r"re-anchored to the recorded ownership at every snapshot, the simulation of the configured "
                  r"ThresholdShedder predicted (\d+) of the (\d+) unloads the leader logged .*?destinations agree for "
                  r"(\d+)", text)
    assert m and tuple(map(int, m.groups())) == (6, 6, 6), text[text.find("re-anchored"):][:600]
    assert "bronze/quarantine: 0 rows" in real_night.output


def test_a_topic_read_from_two_brokers_as_its_bundle_moved_keeps_the_owners_copy():
    run, name = MOVED_WHILE_COLLECTED
    snap = RUNS / run / "landing" / "lbtest" / name
    manifest = {f"file:{snap}": json.loads((snap / layout.MANIFEST).read_text())["brokers"]}

    def rows(table, pattern):
        out = []
        for f in sorted(snap.glob(pattern)):
            good, bad = parse_file(TABLES[table], f"file:{f}", f.read_bytes(), manifest)
            assert bad == []
            out += good
        return out

    topics, ownership = rows("topic_stats", "topics/*.json"), rows("ownership", "ownership/*.json")
    twice = {t for t in (r["topic"] for r in topics) if sum(r["topic"] == t for r in topics) > 1}
    assert len(twice) == 2  # the race the recording caught
    out = moved_topics.left_out(topics, ownership)
    owners = {r["bundle"]: r["broker"] for r in ownership}
    assert {topics[i]["topic"] for i in out} == twice
    assert all(topics[i]["broker"] != owners[topics[i]["bundle"]] for i in out)
    kept = [r for i, r in enumerate(topics) if i not in out and r["topic"] in twice]
    assert len(kept) == 2 and all(r["broker"] == owners[r["bundle"]] for r in kept)


def test_the_night_scores_its_closed_loop_against_the_leaders_log_as_the_command_does(real_night, spark):
    """``gold/simulation_validation`` of the recorded run is what ``validate-simulation`` prints for the same landing
    folder, and the report prints it beside its targets."""
    import html
    import re

    from lb_pipeline.simulation.real_validation import validate_simulation
    from lb_pipeline.spark.lake import Lake

    assert real_night.code == 0, real_night.output[-3000:]
    (row,) = Lake(str(real_night.lake)).read(spark, "gold", "simulation_validation").collect()
    day = row.snapshot_date
    want = validate_simulation(RUNS / "writes-threshold" / "landing", day)
    assert (row.strategy, row.snapshots, row.brokers) == (want["strategy"], want["snapshots"], want["brokers"])
    for k in ("logged_unloads", "simulated_unloads", "matched_unloads", "logged_splits", "simulated_splits",
              "warm_up_cycles", "warming_up", "warming_up_matched", "settled_precision", "settled_recall",
              "orphans_lost", "orphans_reowned", "orphans_agree", "orphans_count_off"):
        assert row[k] == want[k], k
    # broker c stopped after the traffic: its two bundles stayed unowned, no client looked them up again
    assert (row.orphans_lost, row.orphans_reowned, row.orphans_agree) == (2, 0, 0)
    # the moves by hand taken at the new owner's first report (from bronze/report_writes): the leader's four splits
    assert (row.logged_splits, row.simulated_splits, row.matched_splits) == (4, 4, 4)
    assert row.orphans_traffic_off is None  # nothing re-owned: no share to give
    assert row.warm_up_cycles == 29 and row.settled_precision is not None  # ThresholdShedder's, from the log
    assert row.logged_unloads > 0 and "no broker log" not in (row.notes or "")
    assert row.usage_mae_points == pytest.approx(want["usage_mae_points"], rel=1e-9)
    assert row.first_difference_ts == (None if want["first_difference_ms"] is None else
                                       datetime.fromtimestamp(want["first_difference_ms"] / 1000, tz=timezone.utc)
                                       .replace(tzinfo=None))
    (report,) = (real_night.reports / "lbtest").glob("20*.html")
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", report.read_text())).split())
    m = re.search(r"Against this cluster's own record: the simulation of ThresholdShedder, .* made (\d+) unloads where "
                  r"the leader logged (\d+); (\d+) matched", text)
    assert m and tuple(map(int, m.groups())) == (row.simulated_unloads, row.logged_unloads, row.matched_unloads)
    assert f"Simulated broker usage was {row.usage_mae_points:.1f} points" in text
    assert "Bundles of brokers that stopped: 2; 0 owned again by the next snapshot" in text


def test_the_loop_places_a_stopped_brokers_bundles_and_is_scored_where_clients_looked_them_up_again():
    """stopped-busy-overload: broker c stopped a minute after every bundle of lb/ns-c16 was moved onto it; the
    clients looked its 11 bundles up at once and the leader placed them all. The closed loop places them too
    (the modular placement path, in bundle order), scored bundle by bundle (docs/validation.md: 4 of 11)."""
    from lb_pipeline.simulation.real_validation import validate_simulation

    run = RUNS / "stopped-busy-overload"
    day = json.loads((run / "recording.json").read_text())["traffic"]["startedAt"][:10]
    got = validate_simulation(run / "landing", day)
    assert (got["orphans_lost"], got["orphans_reowned"]) == (11, 11)
    assert 4 <= got["orphans_agree"] <= 11
    # per broker (what a loss scenario rests on): one bundle off; b got 171.2 msg/s where the leader gave it 238.6
    assert got["orphans_count_off"] <= 1
    assert got["orphans_traffic_off"] <= 0.22


def test_a_report_whose_laststats_holds_a_bundle_it_never_counted_is_flagged_unlike_pulsars_refill(tmp_path):
    """moved-threshold-2 holds a report written during Pulsar's stats refill (3 of 8 bundles in lastStats) and one
    written after it (newer values): both are healthy. A lastStats bundle the report never counted, at a million
    msg/s, is not that shape, and validate-snapshot says so, as silver.broker_usage does."""
    import shutil

    from lb_pipeline.ingest.validate import validate_snapshot

    src = RUNS / "moved-threshold-2" / "landing" / "lbtest" / "2026-12-05T12-43-23Z"
    snap = Path(shutil.copytree(src, tmp_path / "lbtest" / src.name))
    assert validate_snapshot(snap) == []
    report = snap / "lb" / "brokers" / "127.0.0.1_8081.json"
    doc = json.loads(report.read_text())
    doc["lastStats"]["lb/ns-zz/0x00000000_0xffffffff"] = dict(next(iter(doc["lastStats"].values())), msgRateIn=1e6)
    report.write_text(json.dumps(doc))
    assert {f.field for f in validate_snapshot(snap) if f.file == "lb/brokers/127.0.0.1_8081.json"} >= {"msgRateIn"}
