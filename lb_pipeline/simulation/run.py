"""One simulated run: (history, load model, strategy, parameter set, seed) → time series, moves and a summary.

The parameter set overrides the cluster's configuration by Pulsar key; shedding is switched on for the run (the
question is what the strategy *would* have done), and the run's notes say so when the cluster had it off.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.simulation import metrics
from lb_pipeline.simulation.balancers import STRATEGIES, make_balancer
from lb_pipeline.simulation.engine import Simulation
from lb_pipeline.simulation.history import History
from lb_pipeline.simulation.load_model import LoadModel
from lb_pipeline.simulation.policies import Policies
from lb_pipeline.simulation.validation import validate_run

INTERPOLATION_NOTE = "bundle traffic interpolated linearly between snapshots; one cycle per {m} minute(s)"
SPLIT_NOTE = "bundles split as the history recorded (the simulation does not trigger splits of its own yet)"


@dataclass
class RunResult:
    strategy: str
    params: dict[str, str]
    seed: int
    timeseries: pd.DataFrame
    moves: pd.DataFrame
    summary: dict
    notes: list[str] = field(default_factory=list)


def run_config(config: PulsarConfig, params: dict[str, object]) -> tuple[PulsarConfig, list[str]]:
    unknown = sorted(k for k in params if k not in config)
    if unknown:
        raise ValueError(f"unknown Pulsar configuration key(s) {', '.join(unknown)}")
    notes = []
    if not (config.get_bool("loadBalancerEnabled") and config.get_bool("loadBalancerSheddingEnabled")):
        notes.append("the cluster had load shedding off; the simulation switches it on")
    return config.overridden(loadBalancerEnabled="true", loadBalancerSheddingEnabled="true", **params), notes


def simulate(history: History, model: LoadModel, config: PulsarConfig, strategy: str, params: dict | None = None,
             seed: int = 0, policies: Policies | None = None, progress=None) -> RunResult:
    params = dict(params or {})
    cfg, notes = run_config(config, params)
    balancer = make_balancer(strategy, cfg, seed, history)
    policies = policies or Policies()
    sim = Simulation(history, model, cfg, balancer, policies)
    interval = cfg.get_int("loadBalancerSheddingIntervalMinutes")
    cycles = list(sim.run(progress))
    ts = metrics.timeseries(cycles, cfg, history.times)
    mv = metrics.moves(cycles)
    grace = cfg.get_int("loadBalancerSheddingGracePeriodMinutes") if strategy in STRATEGIES else None
    summary = metrics.summary(ts, mv, history.events(), interval, grace)
    summary.update(validate_run(history, model, cfg, strategy, params, seed, policies))
    notes = [*notes, *getattr(balancer, "notes", []), *history.notes, INTERPOLATION_NOTE.format(m=interval), SPLIT_NOTE]
    return RunResult(strategy, {k: str(v) for k, v in params.items()}, seed, ts, mv, summary, notes)
