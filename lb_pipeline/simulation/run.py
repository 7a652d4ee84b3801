"""One simulated run: (history, load model, strategy, parameter set, seed) → time series, moves and a summary.

The parameter set overrides the cluster's configuration by Pulsar key; shedding is switched on for the run (the
question is what the strategy *would* have done), and the run's notes say so when the cluster had it off.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.simulation import metrics
from lb_pipeline.simulation.balancers import STRATEGIES, make_balancer
from lb_pipeline.simulation.bundle_set import TopicProfiles
from lb_pipeline.simulation.engine import Simulation, cycle_minutes
from lb_pipeline.simulation.history import History
from lb_pipeline.simulation.leader_averages import LeaderAverages
from lb_pipeline.algorithms.shedding.driver import MODULAR_STRATEGIES
from lb_pipeline.simulation.load_model import EXTRAPOLATED, LoadModel
from lb_pipeline.simulation.policies import Policies
from lb_pipeline.simulation.splitting import Splits
from lb_pipeline.simulation.validation import validate_run

INTERPOLATION_NOTE = "bundle traffic interpolated linearly between snapshots; one cycle per {m} minute(s)"
RECORDED_SPLITS = "bundles split only as the history recorded"


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
             seed: int = 0, policies: Policies | None = None, progress=None,
             profiles: TopicProfiles | None = None, ran: ClusterConfigs | None = None,
             residuals: bool = False, leader: LeaderAverages | None = None,
             events: list[dict] | None = None) -> RunResult:
    """``profiles``: topic-level stats of the bundles that can split (without them a split child's share of the
    traffic is its share of the hash range, and the notes say so). ``residuals``: each broker's usage carries what
    the load model missed at each snapshot (``Simulation.residuals``; for a model fitted on this history). ``ran``: what the cluster's leader ran over the
    night: where it started a new load manager, the run's strategy starts afresh too, and the validation of the
    cluster's own strategy follows its configurations snapshot by snapshot; the run itself takes ``config``.
    ``leader``: the leader's recorded averages and sampling cadence (``leader_averages``); ``events``: its logged
    events (``bronze/lb_events`` rows), what the validation of the cluster's own strategy scores against where
    given (``validation.predict_recorded``)."""
    params = dict(params or {})
    cfg, notes = run_config(config, params)
    balancer = make_balancer(strategy, cfg, seed, history)
    policies = policies or Policies()
    splits = Splits(cfg, extensible=strategy == "TransferShedder") if strategy in STRATEGIES else None
    restarts = ran.leader_restarts(history.cluster) if ran else []
    sim = Simulation(history, model, cfg, balancer, policies, profiles=profiles, splits=splits,
                     leader_restarts=history.snapshots_at(restarts), residuals=residuals,
                     reporter=strategy in MODULAR_STRATEGIES, leader=leader)
    interval = cycle_minutes(cfg)
    cycles = list(sim.run(progress))
    ts = metrics.timeseries(cycles, cfg, history.times)
    mv = metrics.moves(cycles)
    grace = cfg.get_int("loadBalancerSheddingGracePeriodMinutes") if strategy in STRATEGIES else None
    done = [s for c in cycles for s in c.splits]
    # every run follows the recorded splits; a strategy's run counts the splits its own load manager made, the
    # as-recorded baseline the history's
    split_count = history.recorded_splits() if strategy == "as-recorded" else len(done)
    summary = metrics.summary(ts, mv, history.events(), interval, grace, splits=split_count)
    changes = [(ms, run_config(c, {})[0]) for ms, c in ran.changes(history.cluster) if ms is not None] if ran else []
    summary.update(validate_run(history, model, cfg, strategy, params, seed, policies, changes, restarts, events,
                                leader))
    notes = [*notes, *cadence_notes(cfg, strategy), *getattr(balancer, "notes", []), *history.notes,
             INTERPOLATION_NOTE.format(m=interval),
             *split_notes(sim, splits, done, cfg), *extrapolation_notes(sim)]
    return RunResult(strategy, {k: str(v) for k, v in params.items()}, seed, ts, mv, summary, notes)


def cadence_notes(cfg: PulsarConfig, strategy: str) -> list[str]:
    """What Pulsar does with a shedding interval of 0 or less, which the simulation runs at one minute."""
    minutes = cfg.get_int("loadBalancerSheddingIntervalMinutes")
    if minutes > 0 or strategy not in STRATEGIES:
        return []
    if strategy == "TransferShedder":  # UnloadScheduler.start: scheduleAtFixedRate throws; playLeader gives up
        what = ("the extensible UnloadScheduler cannot start (scheduleAtFixedRate refuses a period of 0 or less), so "
                "Pulsar does not shed at all")
    else:  # LoadSheddingTask.start: schedule(this, minutes, MINUTES), again after each run
        what = "LoadSheddingTask schedules each run that many minutes after the last, so Pulsar sheds back to back"
    return [f"loadBalancerSheddingIntervalMinutes={minutes}: {what}; simulated at one cycle a minute"]


def extrapolation_notes(sim: Simulation) -> list[str]:
    """Where the load model was extrapolated: brokers whose simulated traffic lay well past what their fit saw."""
    if not sim.extrapolated:
        return []
    worst = sorted(sim.extrapolated.items(), key=lambda kv: (-kv[1], kv[0]))
    return [f"the load model was extrapolated in {sum(sim.extrapolated.values())} broker-cycle(s), traffic past "
            f"{EXTRAPOLATED:g}× the most its fit saw: " + ", ".join(f"{b} ({n})" for b, n in worst[:3])
            + (" …" if len(worst) > 3 else "") + "; there usage grows by the larger of the broker's own cost per "
            "message and byte and the cluster's"]


def split_notes(sim: Simulation, splits: Splits | None, done: list[dict], cfg: PulsarConfig) -> list[str]:
    """What the run's splits rest on: which trigger, which algorithm, how the children's traffic was divided."""
    if splits is None:
        return [RECORDED_SPLITS]
    if not splits.enabled:
        return [f"{RECORDED_SPLITS} (loadBalancerAutoBundleSplitEnabled=false)"]
    trigger = "DefaultNamespaceBundleSplitStrategyImpl" if splits.extensible else "BundleSplitterTask"
    out = [f"bundles split by the simulated {trigger} with {splits.algorithm}, "
           + ("children unloaded and placed" if splits.unload_children else "children kept by their owner"),
           f"{len(done)} split(s)" + (": " + ", ".join(f"{d['bundle']} ({d['reason']})" for d in done[:3]) if done else "")
           + (" …" if len(done) > 3 else "")]
    every = cfg.get_int("loadBalancerSplitIntervalMinutes")
    if splits.extensible and every <= 0:  # ExtensibleLoadManagerImpl.start: SplitScheduler.start throws, failStarting
        out.append(f"loadBalancerSplitIntervalMinutes={every}: a broker on ExtensibleLoadManagerImpl cannot start with "
                   "it (SplitScheduler's scheduleAtFixedRate refuses a period of 0 or less); the split check ran once "
                   "per shedding cycle")
    if sim.bundles.approximated:
        out.append(f"no topic-level stats for {', '.join(sorted(sim.bundles.approximated)[:3])}"
                   f"{' …' if len(sim.bundles.approximated) > 3 else ''}: its split children carry their share of "
                   "the hash range")
    out += [f"{b} not split: {why}" for b, why in sorted(splits.refused.items())[:3]]
    return out
