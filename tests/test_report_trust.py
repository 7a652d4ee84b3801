"""What the report says of how far to trust it: the simulation's validation line (no Spark)."""

import copy
import re

from lb_pipeline.report.render import render_nightly
from tests.test_report import _context


def test_the_simulations_validation_never_reads_zero_percent_for_nothing_to_score():
    """'predicted 0 of the 0 unloads the cluster made (precision 0.0 %)' read as a failed model."""
    ctx = _context()
    nothing = copy.deepcopy(ctx["simulation"])
    nothing["validation"].update(matched_unloads=0, recorded_unloads=0, predicted_unloads=0, precision=float("nan"),
                                 recall=float("nan"))
    text = re.sub(r"<[^>]+>", " ", render_nightly({**ctx, "simulation": nothing}))
    assert "predicted no unload, and the cluster made none" in text and "0.0" not in text.split("How far to trust it")[1][:300]
    none_made = copy.deepcopy(ctx["simulation"])
    none_made["validation"].update(matched_unloads=0, recorded_unloads=0, predicted_unloads=2, precision=0.0,
                                   recall=float("nan"))
    text = re.sub(r"<[^>]+>", " ", render_nightly({**ctx, "simulation": none_made}))
    part = text.split("How far to trust it")[1][:400]
    assert "predicted 2 unload(s) where the cluster made none" in part  # not "0 of the 0 … (precision 0.0 %)"
    assert "0 of the 0" not in part and "recall" not in part and "nan" not in part and "0.0" not in part


def test_the_simulations_validation_names_the_truth_it_was_scored_against():
    """Scored against the leader's log, it says the unloads the leader logged (not every change of owner, which
    holds the moves by hand) and that it ran on the leader's cycles and averages; without a log, the cluster's."""
    ctx = _context()
    for against, said in (("log", "unloads the leader logged (the same bundle between the same two snapshots; run on "
                                  "the leader's logged cycles and averages"), ("ownership", "unloads the cluster made")):
        sim = copy.deepcopy(ctx["simulation"])
        sim["validation"].update(validated_against=against)
        line = " ".join(_validation_line(render_nightly({**ctx, "simulation": sim})).split())
        assert f"predicted 3 of the 4 {said}" in line.replace("&#39;", "'"), line
        none = copy.deepcopy(sim)
        none["validation"].update(matched_unloads=0, recorded_unloads=0, predicted_unloads=2, precision=0.0)
        line = " ".join(_validation_line(render_nightly({**ctx, "simulation": none})).split())
        assert ("where the leader logged none" in line) == (against == "log"), line


def _validation_line(html: str) -> str:
    said = html[html.index('data-testid="simulation-validation"'):]
    return re.sub(r"<[^>]+>", " ", said[:said.index("</p>")])


def test_a_generated_night_calls_its_replay_agreement_a_plumbing_check_and_a_recorded_one_does_not(
        pipeline_run, real_night):
    """The generator's moves come from lb_pipeline's own shedding code: agreeing with them proves no fidelity."""
    (generated,) = pipeline_run[2].glob("*/2026-01-15.html")
    assert "checks the plumbing only" in _validation_line(generated.read_text())
    assert real_night.code == 0, real_night.output[-2000:]
    (recorded,) = real_night.reports.glob("*/20*.html")
    html = recorded.read_text()
    assert 'data-testid="simulation-validation"' in html and "plumbing" not in _validation_line(html)


def test_the_replays_accuracy_says_how_many_predictions_came_before_its_state_caught_up_with_the_leaders():
    ctx = _context()
    for against in ("logged", "ownership"):
        warm = {**ctx["replay_accuracy"], "against": against, "warming_up": 2, "warming_up_confirmed": 1,
                "selections": 3, "selections_agree": 2}
        html = render_nightly({**ctx, "replay_accuracy": warm})
        said = re.sub(r"<[^>]+>", " ", html[html.index('data-testid="replay-accuracy"'):])
        assert "2 of the predictions (1 confirmed) came before the strategy's state could have caught up" in said
        assert "estimates" in said.split("</p>")[0], against
        settled = render_nightly({**ctx, "replay_accuracy": {**warm, "warming_up": 0, "warming_up_confirmed": 0}})
        assert 'data-testid="replay-warming-up"' not in settled and 'data-testid="replay-accuracy"' in settled
