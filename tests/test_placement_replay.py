"""The leader's shed destinations replayed where it chose them (``simulation/placement_replay.py``): the placement
path on the leader's view at each logged unload, with the lookups' assignments logged in between."""

from pathlib import Path

import pandas as pd
import pytest

from lb_pipeline.simulation.landing import read_history, read_leader, snapshot_dirs
from lb_pipeline.simulation.landing_writes import read_writes
from lb_pipeline.simulation.placement_replay import replay_placements, timeline

RUNS = Path(__file__).parent / "fixtures" / "real-runs"
T0 = pd.Timestamp("2026-12-06T07:11:25.502Z")


def _event(ms: int, kind: str, bundle: str, to: str | None = None) -> dict:
    return {"event_ts": T0 + pd.Timedelta(milliseconds=ms), "kind": kind, "bundle": bundle, "to_broker": to}


def test_a_placement_logged_just_before_the_unload_of_its_bundle_is_the_cycles_own_the_others_are_lookups():
    events = [_event(0, "assignment", "lb/n/0xb0_0xc0"), _event(0, "unload", "lb/n/0xb0_0xc0", "h:1"),
              _event(295, "assignment", "lb/n/0xc0_0xd0"), _event(296, "unload", "lb/n/0xc0_0xd0", "h:1"),
              _event(595, "assignment", "lb/n/0xb0_0xc0"),  # a second lookup of the first bundle
              _event(700, "assignment", "lb/n/0xe0_0xf0"), _event(701, "unload", "lb/n/0xe0_0xf0", "h:2"),
              _event(900, "report-written", None)]
    ms = int(T0.timestamp() * 1000)
    assert timeline(events) == [(ms, "unload", "lb/n/0xb0_0xc0", "h:1"), (ms + 296, "unload", "lb/n/0xc0_0xd0", "h:1"),
                                (ms + 595, "lookup", "lb/n/0xb0_0xc0", None), (ms + 701, "unload", "lb/n/0xe0_0xf0", "h:2")]


def _inputs(run: str):
    landing = RUNS / run / "landing"
    day = sorted(p.name for p in next(landing.iterdir()).iterdir())[0][:10]
    cluster, _, bundles, _, notes, *_ = read_history(landing, day, None)
    averages, events, _, _ = read_leader(landing, day, cluster, notes, bundles)
    _, dirs = snapshot_dirs(landing, day, cluster)
    return dirs, landing.resolve(), events, read_writes(dirs, landing.resolve(), cluster), averages


@pytest.mark.parametrize("run, unloads", [("writes-threshold", 6), ("writes-unequal-threshold", 9)])
def test_on_the_reports_as_last_written_the_placement_path_picks_every_destination_the_leader_logged(run, unloads):
    dirs, root, events, writes, averages = _inputs(run)
    got = replay_placements(dirs, root, events, writes, averages)
    assert got == {"placements_logged": unloads, "placements_same": unloads,
                   "placements_same_without_lookups": unloads, "lookup_assignments": 0}
    assert replay_placements(dirs, root, [], writes, averages) is None  # nothing logged, nothing to replay


def test_on_a_uniform_run_the_leaders_replayed_averages_and_its_lookups_account_for_its_destinations():
    """UniformLoadShedder sheds several bundles a cycle, each destination picked on the same LoadData, but a second
    lookup of a bundle with several topics preallocates it between the picks (19 logged in this record): with the
    leader's averages replayed from every write, the placement path picks the logged broker for most of them; from
    the copies the leader stores once a minute, for fewer."""
    dirs, root, events, writes, averages = _inputs("writes-uniform")
    replayed = replay_placements(dirs, root, events, writes, averages)
    stored = replay_placements(dirs, root, events, writes)
    assert replayed["lookup_assignments"] > 10 and replayed["placements_logged"] > 60
    assert replayed["placements_same"] >= 0.85 * replayed["placements_logged"]
    assert replayed["placements_same"] > stored["placements_same"]
    assert replayed["placements_same_without_lookups"] > stored["placements_same_without_lookups"]
