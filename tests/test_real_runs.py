"""The recorded real runs (tests/fixtures/real-runs, made by tests/fixtures/record-real.sh): three brokers of a real
Pulsar 4.0.7 cluster under one workload and one configuration, one run per shedding strategy, a snapshot a minute
with the metadata store's /loadbalance data and the leader's log, and a last snapshot after broker c was stopped.
Healthy real data: the checker finds nothing in it, and what the leader logged agrees with what the snapshots show."""

import json
from pathlib import Path

import pytest

from lb_pipeline.ingest.files import parse_file
from lb_pipeline.ingest.tables import TABLES
from lb_pipeline.ingest.validate import validate_snapshot
from lb_pipeline.snapshots import layout

RUNS = Path(__file__).parent / "fixtures" / "real-runs"
RECORDINGS = sorted(p.parent for p in RUNS.glob("*/recording.json"))


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
    for run in RECORDINGS:
        snaps = snapshots(run)
        assert len(snaps) >= 15  # a snapshot a minute for 15 minutes and more
        for snap in snaps:
            manifest = json.loads((snap / layout.MANIFEST).read_text())
            assert manifest["collector"]["sources"]["lb/brokers"] == "metadata-store" and manifest["notCollected"] == []
            assert list((snap / "lb" / "bundle-data").rglob("*.json"))


# What the checker still reports in healthy real snapshots: a topic whose bundle moved between the collector's reads
# of two brokers is in both brokers' topic stats, and ingest quarantines both rows (issue 55, left open).
MOVED_WHILE_COLLECTED = {("uniform", "2026-12-02T02-51-43Z")}


@pytest.mark.parametrize("run", RECORDINGS, ids=lambda p: p.name)
def test_validate_snapshot_finds_nothing_in_healthy_real_snapshots(run):
    findings = {snap.name: [str(f) for f in validate_snapshot(snap)] for snap in snapshots(run)}
    known = {name for r, name in MOVED_WHILE_COLLECTED if r == run.name}
    assert {name: f for name, f in findings.items() if f and name not in known} == {}
    for name in known:  # the one race left: a topic in two brokers' stats, and nothing else
        assert findings[name] and all("topic: expected one row per (cluster, snapshot_ts, topic), got 2" in f
                                      for f in findings[name])
    last = json.loads((snapshots(run)[-1] / layout.MANIFEST).read_text())
    domains = json.loads((snapshots(run)[-1] / layout.FAILURE_DOMAINS).read_text())
    configured = {b for d in domains.values() for b in d["brokers"]}
    assert configured - set(last["brokers"]), "the last snapshot is taken with a configured broker stopped"


@pytest.mark.parametrize("run", RECORDINGS, ids=lambda p: p.name)
def test_each_logged_unload_moved_a_bundle_its_source_owned_to_a_live_broker(run):
    """The leader's log and the snapshots tell one story: an unload logged between two snapshots is of a bundle
    its source broker owned at the one before, to a broker the one after lists."""
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
            assert layout.broker_from_file_stem(earlier) == e["from_broker"], e
            assert e["to_broker"] in live[i] | live[i - 1] and e["to_broker"] != e["from_broker"]
            checked += 1
    assert checked, f"{run.name}: no unload to check"


def test_the_nightly_replay_is_scored_against_the_unloads_the_leader_logged(real_night):
    """The nightly job on the recorded OverloadShedder run (beside the suite, tests/background.py): every table
    lands, nothing is quarantined, and the report scores the replay against the leader's log, not the ownership
    changes (which also hold the bundles moved by hand)."""
    import html
    import re

    assert real_night.code == 0, real_night.output[-3000:]
    run = RUNS / "overload"
    (report,) = (real_night.reports / "lbtest").glob("20*.html")
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", report.read_text())).split())
    m = re.search(r"Replay of OverloadShedder against the unloads the leader logged between snapshots: (\d+) unload\(s\) "
                  r"predicted, (\d+) unload\(s\) logged; (\d+) prediction\(s\) confirmed \((\d+) to the logged broker\): "
                  r"precision ([\d.]+|–)%?, recall ([\d.]+|–)%?", text)
    assert m, text[text.find("Replay of"):][:600]
    snaps = snapshots(run)
    logged_after_first = sum(1 for s in snaps[1:] for e in events(s) if e["kind"] == "unload")
    assert int(m.group(2)) == logged_after_first > 0
    assert int(m.group(3)) >= 1  # measured: docs/validation.md
    assert "bronze/quarantine: 0 rows" in real_night.output
