"""``lb-pipeline validate-simulation``: the closed loop of the strategy a recorded real cluster ran, scored against
the unloads its leader logged and the usage its brokers reported."""

import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

import pytest

from lb_pipeline.cli import main
from lb_pipeline.snapshots import layout
from lb_pipeline.simulation.landing_events import log_events
from lb_pipeline.simulation.real_validation import logged, match, score, validate_simulation
from lb_pipeline.simulation.real_validation_text import render_text

RUNS = Path(__file__).parent / "fixtures" / "real-runs"
MINUTE = 60_000


def test_a_logged_unload_is_matched_once_by_the_same_bundle_from_the_same_broker_within_a_cycle():
    truth = [(10 * MINUTE, "t/n/0x00000000_0x80000000", "a:1", "b:1"), (20 * MINUTE, "t/n/0x80000000_0xffffffff", "a:1", "c:1")]
    simulated = [(10 * MINUTE + 30_000, "t/n/0x00000000_0x80000000", "a:1", "c:1"),  # matched, elsewhere
                 (11 * MINUTE, "t/n/0x00000000_0x80000000", "a:1", "b:1"),  # the same unload again: not twice
                 (22 * MINUTE, "t/n/0x80000000_0xffffffff", "a:1", "c:1"),  # two cycles late
                 (20 * MINUTE, "t/n/0x80000000_0xffffffff", "b:1", "c:1")]  # from another broker
    got = match(simulated, truth, MINUTE)
    assert (got["matched_unloads"], got["destinations_agree"]) == (1, 0)
    assert (got["precision"], got["recall"]) == (0.25, 0.5)
    assert match([], [], MINUTE)["precision"] is None  # nothing predicted: no precision, not 0 %


def test_moves_the_leader_did_not_log_are_imposed_at_the_snapshot_that_shows_them():
    from lb_pipeline.simulation.history import build_history
    from lb_pipeline.simulation.real_validation import imposed_moves
    from tests.simulated import START, bundle_names, scripted

    names = bundle_names(2)
    owner = lambda s, k: (0 if s < 1 else 1) if k == 0 else (0 if s < 2 else 2)  # noqa: E731 - both move off broker 0
    h = build_history("c", *scripted(n_brokers=3, n_bundles=2, snapshots=3, minutes=1, owner=owner))
    logged_ms = int((START + pd.Timedelta(seconds=30)).timestamp() * 1000)  # the leader's unload of bundle 0
    imposed = imposed_moves(h, [(logged_ms, names[0], h.brokers[0], h.brokers[1])])
    assert imposed == {2: [(h.bundles.index(names[1]), 2)]}  # bundle 1 moved by hand before snapshot 2


@pytest.fixture(scope="module")
def overload_run() -> Path:
    run = RUNS / "overload"
    if not (run / "landing").is_dir():
        pytest.fail(f"missing recorded run {run}")
    return run


def test_the_recorded_overload_run_is_scored_against_its_leaders_log(overload_run):
    day = json.loads((overload_run / "recording.json").read_text())["traffic"]["startedAt"][:10]
    result = validate_simulation(overload_run / "landing", day)
    dirs = sorted(p.parent for p in (overload_run / "landing").glob("*/*/manifest.json"))
    unloads, splits = logged(log_events(dirs)[0])
    assert result["strategy"] == "OverloadShedder" and result["snapshots"] == len(dirs)
    first = int(datetime.strptime(dirs[0].name, layout.TS_FORMAT).replace(tzinfo=timezone.utc).timestamp() * 1000)
    assert result["logged_unloads"] == len([u for u in unloads if u[0] >= first]) > 0
    assert result["logged_splits"] == len([sp for sp in splits if sp[0] >= first]) < len(splits)  # one before the first
    assert 0 <= result["matched_splits"] <= min(result["logged_splits"], result["simulated_splits"])
    assert 0 <= result["matched_unloads"] <= min(result["logged_unloads"], result["simulated_unloads"])
    # the load model alone, on the recorded ownership, follows each broker's own reports within 10 points on
    # average (8.2 measured: docs/validation.md); the closed loop adds its own divergence on top
    assert result["model_mae_points"] < 10.0 and result["usage_mae_points"] >= 0.0
    assert set(result["met"]) == {"precision", "recall", "usage_mae_points"}


def test_the_command_prints_the_scores_and_the_targets(overload_run, capsys):
    day = json.loads((overload_run / "recording.json").read_text())["traffic"]["startedAt"][:10]
    assert main(["validate-simulation", "--landing", str(overload_run / "landing"), "--day", day]) == 0
    out = capsys.readouterr().out
    assert "unloads:" in out and "logged" in out and "target ≥ 80%" in out and "mean absolute error" in out
    assert main(["validate-simulation", "--landing", str(overload_run / "landing"), "--day", day, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["targets"]["usage_mae_points"] == 5.0


def test_without_logs_it_says_there_is_nothing_to_score_unloads_against(tmp_path, capsys):
    from lb_pipeline.snapshots.generate import generate

    generate(tmp_path, "demo", seed=3, start="2026-01-15T08:00:00Z", snapshots=3)
    assert main(["validate-simulation", "--landing", str(tmp_path), "--day", "2026-01-15"]) == 0
    out = capsys.readouterr().out
    assert "recall – (not measurable" in out and "no broker log" in out


def test_the_recorded_runs_are_ranked_as_they_came_out_and_overload_matches_every_logged_unload(capsys):
    """The figures docs/validation.md states: across the three recorded strategies the closed loops rank them by
    imbalance as the real runs came out, and the OverloadShedder run matches every unload its leader logged, each to
    the logged broker, its usage within a point. Its one unload more is in the first cycle, of a bundle created after
    the leader last stored its BundleData: the simulation starts its averages from that bundle's first report, the
    leader from samples taken while its producers were starting (measured: precision 3 of 4)."""
    landings = [str(RUNS / run / "landing") for run in ("overload", "threshold", "uniform")]
    assert main(["validate-simulation", *sum((["--landing", la] for la in landings), []), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    strategies = {"OverloadShedder", "ThresholdShedder", "UniformLoadShedder"}
    assert set(out["ranking"]["recorded"]) == set(out["ranking"]["simulated"]) == strategies
    assert out["ranking"]["same"] is True
    overload = next(r for r in out["runs"] if r["strategy"] == "OverloadShedder")
    assert overload["matched_unloads"] == overload["destinations_agree"] == overload["logged_unloads"] == 3
    assert overload["met"]["recall"] and overload["met"]["usage_mae_points"] and overload["usage_mae_points"] < 1.0
    assert overload["simulated_unloads"] == 4  # the one more: in the first cycle (module docstring)
    for r in out["runs"]:  # the closed loop carries what the model missed: far closer than the model alone
        assert r["usage_mae_points"] < 5.0 < r["model_mae_points"]
    assert main(["validate-simulation", *sum((["--landing", la] for la in landings), [])]) == 0
    assert "ranking by mean imbalance, best first: recorded" in capsys.readouterr().out


def test_a_landing_of_several_days_asks_for_one(tmp_path):
    from lb_pipeline.errors import LbError
    from lb_pipeline.simulation.landing import only_day

    for name in ("2026-01-01T00-00-00Z", "2026-01-02T00-00-00Z"):
        (tmp_path / "c" / name).mkdir(parents=True)
    with pytest.raises(LbError, match="snapshots of 2 days .*choose one with --day"):
        only_day(tmp_path)


def test_unloads_simulated_in_the_warm_up_are_counted_apart_and_the_rest_scored_on_their_own():
    from lb_pipeline.simulation.real_validation import warm_up

    truth = [(1 * MINUTE, "t/n/a", "a:1", "b:1"), (9 * MINUTE, "t/n/b", "a:1", "b:1"), (12 * MINUTE, "t/n/c", "a:1", "b:1")]
    simulated = [(1 * MINUTE, "t/n/a", "a:1", "b:1"),  # in the warm-up, matched
                 (2 * MINUTE, "t/n/x", "a:1", "b:1"),  # in the warm-up, not matched
                 (9 * MINUTE, "t/n/b", "a:1", "b:1"),  # settled, matched (logged at 9: before the window's end at 10)
                 (11 * MINUTE, "t/n/y", "a:1", "b:1")]  # settled, not matched
    got = warm_up(simulated, truth, MINUTE, settled_from=8 * MINUTE)
    assert (got["warming_up"], got["warming_up_matched"]) == (2, 1)
    assert (got["settled_precision"], got["settled_recall"]) == (0.5, 0.5)  # 1 of 2 simulated, 1 of 2 logged (9, 12)
    inside = warm_up(simulated, truth, MINUTE, settled_from=None)  # the span ends inside the warm-up
    assert (inside["warming_up"], inside["warming_up_matched"]) == (4, 2)
    assert inside["settled_precision"] is None and inside["settled_recall"] is None
    # broker a's state taken from the leader's log at 1.5 minutes: its unloads after it are the leader's state,
    # simulated from 2 minutes on, logged from 2 on too (half a cycle after the line: the cycle after it)
    logged = warm_up(simulated, truth, MINUTE, settled_from=None, logged_from={"a:1": MINUTE + MINUTE // 2})
    assert (logged["warming_up"], logged["warming_up_matched"]) == (1, 1)
    assert (logged["settled_precision"], logged["settled_recall"]) == (1 / 3, 0.5)  # 1 of 3 simulated, 1 of 2 logged
    other = warm_up(simulated, truth, MINUTE, settled_from=None, logged_from={"c:1": 0})  # another broker's line
    assert other == inside


def _recorded(run: str, state_logged: bool = True):
    """The closed loop of a recorded run under a configuration; without ``state_logged``, from a log without the
    lines that give ThresholdShedder's history (as Pulsar logs it only in cycles that shed)."""
    from lb_pipeline.simulation.history import build_history
    from lb_pipeline.simulation.landing import read_history
    from lb_pipeline.simulation.load_model import fit_load_model
    from lb_pipeline.simulation.landing import snapshot_dirs

    landing = RUNS / run / "landing"
    day = json.loads((RUNS / run / "recording.json").read_text())["traffic"]["startedAt"][:10]
    cluster, dirs = snapshot_dirs(landing, day, None)
    cluster, brokers, bundles, config, notes, policies, topics, _ = read_history(landing, day, cluster)
    events = [e for e in log_events(dirs)[0] if state_logged or e["kind"] != "shed-attempt"]
    return lambda cfg: score(build_history(cluster, brokers, bundles), fit_load_model(brokers), cfg, policies,
                             topics, events, day, notes), config


def test_a_recorded_threshold_run_shorter_than_the_warm_up_has_every_unload_an_estimate(capsys):
    """ThresholdShedder's history, seeded at the first snapshot, weighs more than 5 % for 29 cycles at 0.9: on a
    15-minute record every simulated unload is an estimate, and the command says the record ends inside the window.
    With the history weighing 0.5 the seed is forgotten after 5 cycles and the rest is scored on its own. (Without
    the leader's lines that log the history: with them, next test.)"""
    run, config = _recorded("threshold", state_logged=False)
    got = run(config)
    assert got["warm_up_cycles"] == 29 and got["cycles"] <= 29
    assert got["warming_up"] == got["simulated_unloads"] > 0
    assert got["warming_up_matched"] == got["matched_unloads"]
    assert got["settled_precision"] is None and got["settled_recall"] is None
    assert "cycles all fall inside that window" in render_text(got)
    short = run(config.overridden(loadBalancerHistoryResourcePercentage="0.5"))
    assert short["warm_up_cycles"] == 5 < short["cycles"]
    assert short["warming_up"] <= short["simulated_unloads"] and short["warming_up_matched"] <= short["warming_up"]
    settled = short["simulated_unloads"] - short["warming_up"]
    assert settled > 0 and short["settled_precision"] is not None  # 2 of the 3 after the 5th cycle (measured)
    assert "the rest (after that window, or from the leader's logged state): precision" in render_text(short)


def test_a_brokers_unloads_after_the_leader_logged_its_history_are_the_leaders_state_not_estimates():
    """threshold: the leader logged broker a's history in each cycle it shed; from the cycle after the first such
    line the loop's history of a is the leader's, and the unloads from a after it are scored on their own, inside
    the 29-cycle window. The loop sheds in more of the leader's cycles with the lines than without (measured: 3 of
    5 matched either way, 3 simulated with them against 4, the extra one gone)."""
    run, config = _recorded("threshold")
    got = run(config)
    blind = _recorded("threshold", state_logged=False)[0](config)
    assert got["cycles"] <= got["warm_up_cycles"] == 29
    assert got["warming_up"] < got["simulated_unloads"] and got["settled_precision"] is not None
    assert got["precision"] >= blind["precision"] and got["matched_unloads"] >= blind["matched_unloads"]
    assert any("ThresholdShedder's history taken from the 5 line(s) the leader logged it in" in n for n in got["notes"])


def test_a_stateless_strategy_has_no_warm_up_and_its_settled_scores_are_its_scores():
    run, config = _recorded("overload")
    got = run(config)
    assert (got["warm_up_cycles"], got["warming_up"], got["warming_up_matched"]) == (0, 0, 0)
    assert (got["settled_precision"], got["settled_recall"]) == (got["precision"], got["recall"])
    assert "warm-up:" not in render_text(got)


def test_a_threshold_run_recorded_past_the_warm_up_is_scored_after_it_on_its_own(capsys):
    """A 40-minute record from the cluster's start (long-threshold: 45 snapshots, bundles moved by hand at 4, 9,
    31 and 35 minutes): the closed loop runs past ThresholdShedder's 29-cycle window, and the unloads after it,
    made from a history whose seed no longer weighs, are scored on their own: the figures docs/validation.md
    states."""
    run, config = _recorded("long-threshold")
    got = run(config)
    assert got["warm_up_cycles"] == 29 and got["cycles"] >= 40
    later = got["simulated_unloads"] - got["warming_up"]
    assert later >= 3 and got["warming_up"] >= 1
    assert got["settled_precision"] == (got["matched_unloads"] - got["warming_up_matched"]) / later
    assert got["settled_precision"] >= 0.5 and got["settled_recall"] >= 0.5  # measured: 2 of 4 each way
    assert f"logged state): precision {got['settled_precision']:.0%}" in render_text(got)


def test_the_closed_loop_sheds_when_the_leader_did_so_a_move_by_hand_comes_before_the_same_cycle():
    """long-threshold: the bundles moved by hand at 35 minutes reached the smallest broker between the leader's
    cycles; on a grid of its own started at the first snapshot (cycles 19 s before the leader's) the loop saw them a
    cycle late. On the leader's schedule, read from its log, each simulated unload falls in one of the leader's
    cycles, the loop sheds in the cycles the leader shed in, and the loop's unloads go where Pulsar's rule sends
    them (each to the broker holding none of the namespace's bundles: loadBalancerDistributeBundlesEvenlyEnabled)."""
    run = RUNS / "long-threshold"
    day = json.loads((run / "recording.json").read_text())["traffic"]["startedAt"][:10]
    dirs = sorted(p.parent for p in (run / "landing").glob("*/*/manifest.json"))
    events = log_events(dirs)[0]
    truth, _ = logged(events)
    after = [u for u in truth if u[0] > int(pd.Timestamp(f"{day}T09:40:00Z").timestamp() * 1000)]
    got = validate_simulation(run / "landing", day)
    from lb_pipeline.snapshots.leader_cycle import logged_cycles
    cycles = logged_cycles([(int(pd.Timestamp(r["event_ts"]).timestamp() * 1000), r["kind"]) for r in events],
                           MINUTE, truth[0][0] - 60 * MINUTE, truth[-1][0] + 60 * MINUTE)
    import lb_pipeline.simulation.real_validation as rv
    seen = {}
    original = rv.match

    def spy(simulated, truth_, window):
        seen["simulated"] = simulated
        return original(simulated, truth_, window)

    rv.match = spy
    try:
        again = validate_simulation(run / "landing", day)
    finally:
        rv.match = original
    assert again == got  # deterministic
    simulated_after = [u for u in seen["simulated"] if u[0] >= after[0][0] - MINUTE]
    assert {u[0] for u in seen["simulated"]} <= set(cycles)
    # the leader's four cycles (a cycle starts at its first line, the unload a millisecond later), no other
    assert len(simulated_after) == len(after) == 4
    assert all(abs(s[0] - u[0]) < 5_000 for s, u in zip(sorted(simulated_after), after))
    assert got["settled_precision"] >= 0.75 and got["settled_recall"] >= 0.75  # measured: 3 of 4 each way
    # each cycle's unload goes to the broker the leader's went to that cycle; in the 09:45 pair the loop takes the
    # two hot ns-c16 bundles (short-term throughput within a few per cent) in the other order, so 2 of the 3 matched
    # by bundle went to the logged broker (on the grid: 0 of 3)
    assert [u[3] for u in sorted(simulated_after)] == [u[3] for u in after]
    assert got["destinations_agree"] >= 2
