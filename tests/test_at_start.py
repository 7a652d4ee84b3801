"""A strategy set while the brokers run takes effect when the leader's load manager starts: Pulsar 4.0.8's
``ModularLoadManagerImpl.initialize`` creates it once, and ``startTimestamp`` says when (the load manager's
``LocalBrokerData``). The thresholds change at once. (The replays once took a dynamic change of
``loadBalancerLoadSheddingStrategy`` as running from the snapshot that recorded it.)"""

from __future__ import annotations

from lb_pipeline.model.at_start import Shot, as_run, leader_history
from lb_pipeline.model.config import EXTENSIBLE_LOAD_MANAGER, IMPL, PulsarConfig
from lb_pipeline.model.load_manager import configured_strategy

H = 3_600_000
NIGHT = 1_768_435_200_000  # 2026-01-15 00:00 UTC
THRESHOLD = "loadBalancerBrokerOverloadedThresholdPercentage"
BEFORE = PulsarConfig({"loadBalancerLoadSheddingStrategy": IMPL + "ThresholdShedder", THRESHOLD: "85"})
AFTER = BEFORE.overridden(loadBalancerLoadSheddingStrategy=IMPL + "UniformLoadShedder", **{THRESHOLD: "70"})


def night(*hours, change_at=2, leaders=None):
    """A snapshot at each of ``hours``; from ``change_at`` the configuration says AFTER. ``leaders``: hour →
    (leader, the hour its load manager started, or None if it did not report); else b1, started the day before."""
    shots = []
    for h in hours:
        leader, start = (leaders or {}).get(h, ("b1", -5))
        shots.append(Shot(NIGHT + h * H, leader, None if start is None else int(NIGHT + start * H),
                          AFTER if h >= change_at else BEFORE))
    return shots


def strategies(shots):
    run, notes = as_run(shots)
    return [configured_strategy(c) for c in run], [c.get_int(THRESHOLD) for c in run], notes


def test_a_strategy_set_while_the_leader_runs_waits_for_its_restart_and_the_threshold_does_not():
    names, thresholds, notes = strategies(night(1, 2, 3))
    assert names == ["ThresholdShedder"] * 3
    assert thresholds == [85, 70, 70]  # read on every cycle
    [note] = notes  # said once, though two snapshots record it
    assert note.startswith("From 02:00 UTC the configuration sets loadBalancerLoadSheddingStrategy to UniformLoadShedder")
    assert "the leader (b1) created its load manager before that (before the night's first snapshot)" in note
    assert note.endswith("it runs ThresholdShedder, the strategy taken as the cluster's.")


def test_the_leader_runs_the_new_strategy_once_it_restarted_or_another_broker_started_after_the_change_leads():
    restarted = night(1, 2, 3, 4, leaders={3: ("b1", 2.5), 4: ("b1", None)})  # unreported at 4: carried
    names, _, notes = strategies(restarted)
    assert names == ["ThresholdShedder", "ThresholdShedder", "UniformLoadShedder", "UniformLoadShedder"]
    assert len(notes) == 1 and "created its load manager before that (before the night's" in notes[0]
    assert strategies(night(1, 2, 3, leaders={3: ("b2", 2.5)}))[0][-1] == "UniformLoadShedder"
    # changed and restarted between the same two snapshots: taken as changed first (how a change is made to count)
    assert strategies(night(1, 2, 3, leaders={3: ("b2", 1.5)}))[0][-1] == "UniformLoadShedder"
    # a new leader started before the change runs the old one; one that never reported keeps the recorded one
    assert strategies(night(1, 2, 3, leaders={3: ("b2", 0.5)}))[0][-1] == "ThresholdShedder"
    assert strategies(night(1, 2, 3, leaders={h: ("b3", None) for h in (1, 2, 3)}))[0] == [
        "ThresholdShedder", "UniformLoadShedder", "UniformLoadShedder"]


def test_a_change_of_load_manager_class_makes_every_broker_start_a_new_one():
    shots = night(1, 2, 3)
    extensible = BEFORE.overridden(loadManagerClassName=EXTENSIBLE_LOAD_MANAGER)
    shots = [Shot(shots[0].ms, "b1", None, extensible), *shots[1:]]  # 02:00: back to the modular manager
    run, notes = as_run(shots)
    assert [configured_strategy(c) for c in run] == ["TransferShedder", "UniformLoadShedder", "UniformLoadShedder"]
    assert notes == []


def test_a_new_leader_or_a_restarted_one_starts_its_strategies_afresh_and_an_unreported_start_is_no_restart():
    shots = night(1, 2, 3, 4, 5, 6, change_at=99, leaders={3: ("b1", 2.5), 4: ("b1", None), 5: ("b2", -3)})
    changes, notes, restarts = leader_history(shots)
    assert [ms for ms, _ in changes] == [NIGHT + H] and notes == []
    assert restarts == [NIGHT + 3 * H, NIGHT + 5 * H, NIGHT + 6 * H]  # restarted; b2 leads; b1 leads again


def test_a_start_after_the_snapshot_that_reports_it_is_no_start_time():
    """Long.MAX_VALUE, or a clock far ahead: the leader's start before it is kept, and no restart is counted."""
    shots = night(1, 2, 3, 4, leaders={3: ("b1", 10**15), 4: ("b1", 2.5)})
    names, _, _ = strategies(shots)
    assert names == ["ThresholdShedder", "ThresholdShedder", "ThresholdShedder", "UniformLoadShedder"]
    assert leader_history(shots)[2] == [NIGHT + 4 * H]
