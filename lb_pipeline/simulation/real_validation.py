"""``lb-pipeline validate-simulation``: the closed-loop simulation of the strategy a real cluster ran, scored
against what that cluster did.

A recorded run (``collect --metadata-store --broker-log`` a snapshot a minute; tests/fixtures/real-runs) holds the
truth: the unloads and splits its leader logged (``logs/``), and every broker's usage in each snapshot. The
simulation starts from the first snapshot and then runs on its own (its cycles when the leader's log says the
leader's ran, ``leader_cycle.logged_cycles``, else one per ``loadBalancerSheddingIntervalMinutes``; usage from the fitted load model plus what it missed at each snapshot,
bundles moved by the simulated strategy), following only what the history imposes (traffic, brokers joining and
leaving, recorded splits, moves the leader did not log). Scored:

* unloads: a logged unload is matched by a simulated one of the same bundle from the same broker in the same
  cycle or the one either side (on the leader's schedule; on a grid of its own, within one shedding interval)
  (precision, recall, and how many went to the logged destination);
* splits: the load manager's splits the simulation made against those the leader logged (``split-done``) inside
  the simulated span, and how many of the same bundle;
* usage: each broker's ``getMaxResourceUsageWithWeight`` in the simulation's first cycle at or after each snapshot
  against the snapshot's, every snapshot after the first (mean absolute error, in points), and the load model's own
  error on the recorded ownership beside it;
* spread: the brokers' mean imbalance and peak as recorded and as simulated; across recorded runs of one workload
  (``rank``), whether the simulation orders the strategies as the runs came out.

The nightly job scores each cluster's night the same way (``gold/simulation_validation``) when its snapshots carry
the leader's log.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from lb_pipeline.model.load_manager import configured_strategy
from lb_pipeline.algorithms.shedding import logged_history
from lb_pipeline.algorithms.shedding.driver import MODULAR_STRATEGIES
from lb_pipeline.algorithms.shedding.warm_up import warm_up_cycles
from lb_pipeline.simulation.arrivals import Arrival, timed_moves
from lb_pipeline.simulation.balancers import STRATEGIES, make_balancer
from lb_pipeline.simulation.bundle_set import TopicProfiles
from lb_pipeline.simulation.engine import Simulation, cycle_minutes
from lb_pipeline.simulation.history import build_history
from lb_pipeline.simulation.orphan_placements import placements
from lb_pipeline.simulation.placement_replay import replay_placements
from lb_pipeline.simulation.landing import read_history, read_leader, snapshot_dirs
from lb_pipeline.simulation.landing_events import generator_events
from lb_pipeline.simulation.landing_writes import arrivals_of, read_writes
from lb_pipeline.simulation.leader_averages import LeaderAverages, leader_averages, stored_every
from lb_pipeline.simulation.load_model import LoadModel, fit_load_model
from lb_pipeline.simulation.logged_truth import imposed_moves, logged, logged_schedule, match, matched_splits, warm_up
from lb_pipeline.simulation.residuals import recorded_prediction
from lb_pipeline.simulation.run import extrapolation_notes, run_config
from lb_pipeline.simulation.splitting import Splits

TARGETS = {"precision": 0.8, "recall": 0.8, "usage_mae_points": 5.0}


def validate_simulation(landing: str | Path, day: str, cluster: str | None = None, seed: int = 0,
                        residuals: bool = True) -> dict:
    """``score`` of a recorded run's landing folder."""
    cluster, brokers, bundles, config, notes, policies, topics, _ = read_history(landing, day, cluster)
    averages, events, written, quotas = read_leader(landing, day, cluster, notes, bundles)
    history = build_history(cluster, brokers, bundles)
    _, dirs = snapshot_dirs(landing, day, cluster)
    leader = leader_averages(history, averages, events, written, stored_every(config), quotas)
    made = generator_events(landing, dirs, notes) if events is None else None
    root = Path(landing).resolve()
    writes = read_writes(dirs, root, cluster)  # read once: the arrivals and the placement replay
    result = score(history, fit_load_model(brokers), config, policies, topics, events if made is None else made, day,
                   notes, seed, residuals, leader=leader, arrivals=arrivals_of(writes),
                   against="log" if made is None else "generator")
    return {**result, **(replay_placements(dirs, root, events, writes, averages) or {})}


NO_LOG = "the snapshots hold no broker log (collect --broker-log): no logged unload to score against"
GENERATED = ("the truth is the unloads the generator's own leader made (generate --balance), which runs lb_pipeline's "
             "shedding code, the code simulated: a check that the history, the load model's inputs and the strategy's "
             "state reach the loop intact, not of what Pulsar does; its last snapshot's decisions show in no snapshot "
             "and are not scored")


def score(history, model_rows, config, policies, topics, events, day: str, notes: list[str] | None = None,
          seed: int = 0, residuals: bool = True, averages: pd.DataFrame | None = None,
          written: dict[int, int] | None = None, leader: LeaderAverages | None = None,
          arrivals: list[Arrival] | None = None, against: str = "log") -> dict:
    """The closed loop of the strategy ``config`` runs, from the history's first snapshot, scored against the
    leader's logged ``events`` (``bronze/lb_events`` rows; None: no log was collected, nothing to score).
    ``averages``: the leader's stored ``BundleData`` rows (``leader_averages``), None where none were collected;
    ``written``: per snapshot (epoch ms), when the leader wrote those it holds; ``leader``: both already read
    (``leader_averages``); ``arrivals``: where the report writes were kept, each bundle's arrivals on a new owner
    (``arrivals.first_listings``): a move the history imposes is taken when its new owner's first report shows it.
    ``against``: ``log`` (the leader's), or ``generator`` (``events`` are a generated day's own leader's unloads,
    ``landing.generator_events``: each shows in the next snapshot, so none after the last is known)."""
    notes = list(notes or [])
    if against == "generator":
        notes.append(GENERATED)
    truth, logged_splits = logged(events or [])
    if events is None:
        notes.append(NO_LOG)
    else:
        history.imposed = imposed_moves(history, truth)
        moved = sum(len(v) for v in history.imposed.values())
        timed = timed_moves(history, arrivals or [], truth, (cycle_minutes(config) * 3 * 60_000) // 2)
        if moved:
            notes.append(f"{moved} bundle move(s) between snapshots that the leader did not log (by hand, or a "
                         "lookup after an unload elsewhere) are followed as recorded, as brokers joining and leaving are"
                         + (f"; {len(timed)} taken when the new owner's first report showed them, from its rates "
                            "(the report writes), a bundle split before the next snapshot included" if timed else ""))
    model = LoadModel.from_table(model_rows, history.brokers)
    strategy = configured_strategy(config)
    if strategy not in STRATEGIES:
        notes.append(f"the cluster ran {strategy}, which is not simulated: scored as no balancing")
    cfg, run_notes = run_config(config, {})
    start, end = int(history.times[0]), int(history.times[-1])
    window = cycle_minutes(cfg) * 60_000
    schedule = None if events is None else logged_schedule(history, cfg, events)
    if events is not None and schedule is None:
        notes.append("the log holds neither a shedding cycle nor the leader's election: the simulated cycles run "
                     "every interval from the first snapshot, not when the leader's did")
    leader = leader or leader_averages(history, averages, events, written, stored_every(config))
    notes.append(leader.note())
    sim = Simulation(history, model, cfg, make_balancer(strategy if strategy in STRATEGIES else "no-balancing", cfg,
                                                        seed, history),
                     policies, profiles=TopicProfiles(history, topics),
                     splits=Splits(cfg, extensible=strategy == "TransferShedder") if strategy in STRATEGIES else None,
                     residuals=residuals, reporter=strategy in MODULAR_STRATEGIES, schedule=schedule, leader=leader,
                     arrivals=timed if events is not None else [])
    if events is not None and strategy == "ThresholdShedder":  # its history where the leader logged it
        lines, elections = logged_history.from_events(events)
        sim.balancer.take_log(lines, elections)
        if lines:
            notes.append(f"ThresholdShedder's history taken from the {len(lines)} line(s) the leader logged it in, "
                         "each before the cycle after it")
    simulated, splits, placed, errors, scored = [], [], [], [], {0}  # the first snapshot is where the simulation starts
    spread = {"simulated": [], "recorded": []}  # per scored snapshot: the brokers' std and max, in points
    warm_cycles, settled_from, k = warm_up_cycles(strategy, cfg) if strategy in STRATEGIES else 0, None, 0
    for k, cycle in enumerate(sim.run(), start=1):
        if k == warm_cycles + 1:
            settled_from = cycle.ts
        simulated += [(cycle.ts, m["bundle"], m["source"], m["destination"]) for m in cycle.moves
                      if m["kind"] == "unload"]
        splits += [(cycle.ts, sp["bundle"]) for sp in cycle.splits]
        placed += [(cycle.snapshot, m["bundle"], m["destination"]) for m in cycle.moves if m["kind"] == "orphan"]
        i = cycle.snapshot
        if i not in scored:  # the first cycle at or after each snapshot (a collector's minute is not exactly 60 s)
            scored.add(i)
            live = np.flatnonzero(history.live[i])
            recorded = sim.weighted_max(history.usage[i][live], history.limits[i][live])
            errors += (np.abs(cycle.weighted_max - recorded) * 100.0).tolist()
            for name, values in (("simulated", np.asarray(cycle.weighted_max)), ("recorded", recorded)):
                spread[name].append((float(np.std(values)) * 100.0, float(np.max(values)) * 100.0))
    model_errors = _model_errors(history, model, sim)
    if against == "generator":  # the generator's unloads decided on the last snapshot show in no snapshot
        simulated = [u for u in simulated if u[0] <= end]
    truth = [u for u in truth if start <= u[0] <= end + window]  # what the simulated span could predict
    logged_splits = [sp for sp in logged_splits if start <= sp[0] <= end + window]
    # within a cycle: on the leader's schedule the same cycle or the one either side (cycles drift a little with
    # what each one logs); on a grid of its own, an interval either way
    tolerance = window + window // 2 if schedule else window
    scores = match(simulated, truth, tolerance) if events is not None else {
        "logged_unloads": None, "simulated_unloads": len(simulated), "matched_unloads": None, "first_difference_ms": None,
        "destinations_agree": None, "precision": None, "recall": None}
    warming = warm_up(simulated, truth, tolerance, settled_from, sim.balancer.logged_from())
    if events is None:  # nothing to match: only how many were made in the warm-up
        warming.update(warming_up_matched=None, settled_precision=None, settled_recall=None)
    scores.update(warming, warm_up_cycles=warm_cycles, cycles=k)
    scores.update(placements(history, placed))
    scores.update(usage_mae_points=float(np.mean(errors)) if errors else None,
                  usage_max_error_points=float(np.max(errors)) if errors else None,
                  model_mae_points=float(np.mean(model_errors)) if model_errors else None)
    for name, values in spread.items():  # what a planner compares strategies by: the spread and the peak
        scores[f"{name}_imbalance_points"] = float(np.mean([v[0] for v in values])) if values else None
        scores[f"{name}_peak_points"] = float(np.max([v[1] for v in values])) if values else None
    return {"cluster": history.cluster, "day": day, "strategy": strategy, "snapshots": len(history.times),
            "validated_against": against if events is not None else None,
            "brokers": len(history.brokers), "logged_splits": len(logged_splits) if events is not None else None,
            "simulated_splits": len(splits),
            "matched_splits": matched_splits(splits, logged_splits) if events is not None else None, **scores, "targets": TARGETS, "met": _met(scores),
            "notes": [*notes, *run_notes, *extrapolation_notes(sim)]}


def rank(results: list[dict]) -> dict:
    """Across recorded runs of one workload under different strategies: the strategies ordered by the brokers'
    mean imbalance as the runs came out and as their closed loops simulated them, and whether the orders agree."""
    runs = [r for r in results if r.get("recorded_imbalance_points") is not None
            and r.get("simulated_imbalance_points") is not None]
    recorded = [r["strategy"] for r in sorted(runs, key=lambda r: r["recorded_imbalance_points"])]
    simulated = [r["strategy"] for r in sorted(runs, key=lambda r: r["simulated_imbalance_points"])]
    return {"recorded": recorded, "simulated": simulated,
            "same": recorded == simulated if len(runs) > 1 else None}


def _model_errors(history, model: LoadModel, sim: Simulation) -> list[float]:
    """The load model alone: each broker's usage predicted from the traffic it really served (the recorded
    ownership) against what it reported, in points, at every snapshot."""
    out = []
    for i in range(len(history.times)):
        live = np.flatnonzero(history.live[i])
        predicted = recorded_prediction(history, model, i)
        got = sim.weighted_max(predicted[live], history.limits[i][live])
        want = sim.weighted_max(history.usage[i][live], history.limits[i][live])
        out += (np.abs(got - want) * 100.0).tolist()
    return out


def _met(scores: dict) -> dict:
    """Each target: met, missed, or not measurable (no unload on one side)."""
    out = {}
    for key, target in TARGETS.items():
        value = scores.get(key)
        out[key] = None if value is None else (value <= target if key.startswith("usage") else value >= target)
    return out
