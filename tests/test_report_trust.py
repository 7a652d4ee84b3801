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
    assert "predicted 0 of the 0 unloads" in part and "recall" not in part and "nan" not in part
