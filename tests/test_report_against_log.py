"""The report's closed loop against the leader's log (``gold/simulation_validation``): each figure beside its
target, and what it says where no log was collected."""

from html import unescape

from lb_pipeline.report.render import render_nightly
from tests.test_report import EVIL, _context


def _row(**over) -> dict:
    """A ``gold/simulation_validation`` row as ``report.simulation.against_log`` returns it."""
    from lb_pipeline.simulation.real_validation import TARGETS

    row = {"strategy": f"OverloadShedder{EVIL}", "scored": True, "simulated_unloads": 3, "logged_unloads": 4,
           "matched_unloads": 3, "precision": 1.0, "recall": 0.75, "usage_mae_points": 0.9, "model_mae_points": 8.2,
           "logged_splits": 2, "simulated_splits": 1, "matched_splits": 1,
           "targets": TARGETS, "met": {"precision": True, "recall": False, "usage_mae_points": True},
           "notes": [f"n{EVIL}"]}
    row.update(over)
    return row


def _against_log(**over):
    """What the report says of a ``gold/simulation_validation`` row."""
    sim = dict(_context()["simulation"], against_log=_row(**over))
    html = render_nightly(_context(simulation=sim))
    said = html[html.index('data-testid="simulation-against-log"'):]
    return " ".join(unescape(said[:said.index("</p>")]).replace("<b>", "").replace("</b>", "").split())


def test_the_closed_loop_against_the_leaders_log_is_shown_beside_its_targets():
    said = _against_log()
    assert "made 3 unloads where the leader logged 4; 3 matched" in said
    assert "precision 100.0% (meets the 80.0% target), recall 75.0% (misses the 80.0% target)" in said
    assert "0.9 points from what the brokers reported on average (meets the 5-point target; the load model alone: 8.2)" in said
    assert "Splits: 2 logged, 1 simulated, 1 of the same bundle." in said
    assert "weigh it accordingly" in said and EVIL not in said.replace(f"OverloadShedder{EVIL}", "")


def test_a_cluster_whose_leader_log_was_not_collected_is_told_its_simulation_is_not_checked_against_it():
    said = _against_log(scored=False, logged_unloads=None, matched_unloads=None, precision=None, recall=None,
                        met={"precision": None, "recall": None, "usage_mae_points": False}, usage_mae_points=6.5,
                        notes=["the snapshots hold no broker log (collect --broker-log)"])
    assert said.startswith('data-testid="simulation-against-log">Not checked against this cluster\'s own record: '
                           "the snapshots hold no broker log (collect --broker-log).")
    assert "docs/validation.md" in said and "misses the 5-point target" in said
    assert "weigh it accordingly" not in said and "precision" not in said and "Splits" not in said


def test_a_usage_error_from_moves_the_recorded_cluster_never_made_is_called_that():
    """The multi-night demo (no leader log): the configured ThresholdShedder never moved a bundle in the recorded
    history, its simulation made 42 unloads, and "22.2 points from what the brokers reported (misses the target;
    the load model alone: 0.4)" read as a bad simulation. The report says where the difference comes from."""
    unscored = dict(scored=False, logged_unloads=None, matched_unloads=None, precision=None, recall=None,
                    met={"precision": None, "recall": None, "usage_mae_points": False}, usage_mae_points=22.2,
                    model_mae_points=0.4, simulated_unloads=42, strategy="ThresholdShedder", notes=["no log"])

    def said(recorded):
        validation = dict(_context()["simulation"]["validation"], recorded_unloads=recorded)
        sim = dict(_context()["simulation"], validation=validation, against_log=_row(**unscored))
        html = render_nightly(_context(simulation=sim))
        return unescape(html[html.index('data-testid="simulation-against-log"'):].split("</p>")[0])

    assert ("No bundle changed owner all night in the recorded history, where the simulation of ThresholdShedder "
            "made 42 unloads: that error is the difference those moves make to the brokers, not the load model's."
            ) in said(0)
    assert "usage-error-moves" not in said(3)  # the cluster moved bundles too: the error is the simulation's


def test_the_unloads_simulated_in_the_warm_up_are_called_estimates_with_the_scores_after_it():
    said = _against_log(strategy="ThresholdShedder", warming_up=2, warming_up_matched=1, warm_up_cycles=29,
                        settled_precision=1.0, settled_recall=0.5)
    assert ("2 of the simulated unloads (1 matched) came in its first 29 cycles, before ThresholdShedder's state, "
            "started at the night's first snapshot, could have caught up with the leader's, started at its election, "
            "from brokers whose state the leader had not logged: they are estimates; the rest (after that window, or "
            "from the leader's logged state), precision 100.0%, recall 50.0%.") in said
    inside = _against_log(strategy="ThresholdShedder", warming_up=3, warming_up_matched=3, warm_up_cycles=29,
                          settled_precision=None, settled_recall=None)
    assert "they are estimates, and the night has no cycle after them to score." in inside
    assert "estimates" not in _against_log(warming_up=0)  # a stateless strategy: nothing to call an estimate


def test_the_decision_names_how_many_of_the_unloads_it_rests_on_are_warm_up_estimates():
    sim = dict(_context()["simulation"], against_log=_row(
        strategy="ThresholdShedder", simulated_unloads=3, warming_up=3, warming_up_matched=3, warm_up_cycles=29,
        settled_precision=None, settled_recall=None))
    html = unescape(render_nightly(_context(simulation=sim)))
    said = html[html.index('data-testid="decision-trust"'):]
    said = " ".join(said[:said.index("</p>")].split())
    assert "(3 of its 3 unloads estimates, made before its state could have caught up with the leader's)" in said


def test_where_the_lost_brokers_bundles_went_is_said_beside_where_the_simulation_placed_them():
    said = _against_log(orphans_lost=5, orphans_reowned=4, orphans_agree=3)
    assert ("Bundles of brokers that stopped: 5; 4 owned again by the next snapshot (a lookup runs when a client "
            "reconnects), 3 of them where the simulation placed them.") in said
    said = _against_log(orphans_lost=5, orphans_reowned=4, orphans_agree=1, orphans_count_off=1,
                        orphans_traffic_off=0.215)
    assert ("1 of them where the simulation placed them; per broker, the simulation's count was 1 bundle(s) off the "
            "record's and the msg rate it placed 21.5% off.") in said
    assert "stopped" not in _against_log(orphans_lost=0, orphans_reowned=0, orphans_agree=0)
    assert "stopped" not in _against_log()  # a row written before the columns existed


def test_where_a_target_is_missed_the_report_says_when_the_loop_left_the_record():
    """``first_difference_ts``: the earliest unload made on one side only. Before it the loop made the leader's
    unloads; after it its ownership is its own."""
    from datetime import datetime

    said = _against_log(first_difference_ts=datetime(2026, 1, 15, 9, 46, 2))
    assert "It made the leader's unloads until 09:46:02 UTC, where the first made on one side only came" in said
    met = _against_log(first_difference_ts=datetime(2026, 1, 15, 9, 46, 2), recall=1.0,
                       met={"precision": True, "recall": True, "usage_mae_points": True})
    assert "It made the leader's unloads until" not in met and "weigh it accordingly" not in met
    assert "It made the leader's unloads until" not in _against_log()  # every unload matched: nothing to say
