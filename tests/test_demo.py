"""What ``make demo`` shows: several nights (the forecast, the night trends, the decision's stability) and a sweep."""

import re
from pathlib import Path

import dagster as dg

from assets.definitions import defs
from assets.run import QUIET, night_config
from lb_pipeline.planning.forecast import MIN_DAYS
from lb_pipeline.simulation.sweep import run_list
from lb_pipeline.model.config import PulsarConfig

MAKEFILE = (Path(__file__).resolve().parents[1] / "Makefile").read_text()


def _demo_setting(name: str) -> int:
    (value,) = re.findall(rf"^{name} \?= (\d+)$", MAKEFILE, re.M)
    return int(value)


def test_the_demo_runs_enough_nights_for_a_forecast_and_a_sweep_of_each_strategy():
    """One night showed "not enough history" for the forecast, no night trend and one run per strategy."""
    recipe = MAKEFILE.split("\ndemo:")[1].split("\n\n")[0]
    assert "--days $(DEMO_DAYS)" in recipe and "--sets $(DEMO_SETS)" in recipe
    assert _demo_setting("DEMO_DAYS") >= MIN_DAYS
    sets = _demo_setting("DEMO_SETS")
    runs = run_list(PulsarConfig(), sets_per_strategy=sets)
    per_strategy = {r["strategy"]: sum(1 for o in runs if o["strategy"] == r["strategy"]) for r in runs}
    assert per_strategy["ThresholdShedder"] == sets > 1


def test_the_sweeps_width_is_run_config_the_nightly_job_accepts():
    job = defs.resolve_job_def("nightly")
    assert night_config(1) == QUIET
    resolved = dg.validate_run_config(job, night_config(3))
    assert resolved["ops"]["simulation"]["config"]["sets_per_strategy"] == 3
    assert resolved["loggers"]["console"]["config"]["log_level"] == "INFO"


def test_a_sweep_asked_wider_than_the_grids_is_bounded_by_them():
    """A hostile width (--sets 1000000000) runs each strategy's grid once, not a billion runs."""
    runs = run_list(PulsarConfig(), sets_per_strategy=10**9)
    assert len(runs) == len({(r["strategy"], tuple(sorted(r["params"].items()))) for r in runs}) < 200
