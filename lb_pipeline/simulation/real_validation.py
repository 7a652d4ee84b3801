"""``lb-pipeline validate-simulation``: the closed-loop simulation of the strategy a real cluster ran, scored
against what that cluster did.

A recorded run (``collect --metadata-store --broker-log`` a snapshot a minute; tests/fixtures/real-runs) holds the
truth: the unloads and splits its leader logged (``logs/``), and every broker's usage in each snapshot. The
simulation starts from the first snapshot and then runs on its own (one cycle per
``loadBalancerSheddingIntervalMinutes``, usage from the fitted load model, bundles moved by the simulated strategy),
following only what the history imposes (traffic, brokers joining and leaving, recorded splits). Scored:

* unloads: a logged unload is matched by a simulated one of the same bundle from the same broker within one
  shedding interval of it (precision, recall, and how many went to the logged destination);
* splits: the load manager's splits the simulation made against those the leader logged (``split-done``);
* usage: each broker's ``getMaxResourceUsageWithWeight`` in the simulation against the snapshot's, at every
  snapshot after the first (mean absolute error, in points).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lb_pipeline.formats.events import parse_lb_events
from lb_pipeline.model.load_manager import configured_strategy
from lb_pipeline.model.names import one_line
from lb_pipeline.simulation.balancers import STRATEGIES, make_balancer
from lb_pipeline.simulation.bundle_set import TopicProfiles
from lb_pipeline.simulation.engine import Simulation, cycle_minutes
from lb_pipeline.simulation.history import build_history
from lb_pipeline.simulation.landing import read_history, snapshot_dirs
from lb_pipeline.simulation.load_model import LoadModel, fit_load_model
from lb_pipeline.simulation.run import run_config
from lb_pipeline.simulation.splitting import Splits
from lb_pipeline.snapshots import layout

TARGETS = {"precision": 0.8, "recall": 0.8, "usage_mae_points": 5.0}


def logged(dirs: list[Path]) -> tuple[list[tuple[int, str, str, str]], int, int]:
    """(unloads as (ms, bundle, from, to), splits the leader completed, log lines read) from the snapshots' logs."""
    unloads, splits, lines = [], 0, 0
    for d in dirs:
        for log in sorted((d / layout.LOGS).glob("*.log")):
            text = log.read_bytes().decode("utf-8", errors="replace").splitlines()
            lines += len(text)
            rows, _ = parse_lb_events(text, layout.broker_from_file_stem(log.stem))
            for r in rows:
                ms = int(r["event_ts"].timestamp() * 1000)
                if r["kind"] == "unload":
                    unloads.append((ms, r["bundle"], r["from_broker"], r["to_broker"]))
                elif r["kind"] == "split-done":
                    splits += 1
    return sorted(set(unloads)), splits, lines


def match(simulated: list[tuple[int, str, str, str]], truth: list[tuple[int, str, str, str]], window_ms: int) -> dict:
    """Each logged unload matched at most once by a simulated unload of the same bundle and source within
    ``window_ms``; precision over the simulated unloads inside the logged span."""
    used, hits, same_place = set(), 0, 0
    for t, bundle, src, dst in truth:
        for k, (ts, b, s, d) in enumerate(simulated):
            if k not in used and b == bundle and s == src and abs(ts - t) <= window_ms:
                used.add(k)
                hits += 1
                same_place += d == dst
                break
    return {"logged_unloads": len(truth), "simulated_unloads": len(simulated), "matched_unloads": hits,
            "destinations_agree": same_place,
            "precision": hits / len(simulated) if simulated else None,
            "recall": hits / len(truth) if truth else None}


def validate_simulation(landing: str | Path, day: str, cluster: str | None = None, seed: int = 0) -> dict:
    cluster, dirs = snapshot_dirs(landing, day, cluster)
    cluster, brokers, bundles, config, notes, policies, topics, _ = read_history(landing, day, cluster)
    truth, logged_splits, lines = logged(dirs)
    if not lines:
        notes.append("the snapshots hold no broker log (collect --broker-log): no logged unload to score against")
    history = build_history(cluster, brokers, bundles)
    model = LoadModel.from_table(fit_load_model(brokers), history.brokers)
    strategy = configured_strategy(config)
    if strategy not in STRATEGIES:
        notes.append(f"the cluster ran {strategy}, which is not simulated: scored as no balancing")
    cfg, run_notes = run_config(config, {})
    sim = Simulation(history, model, cfg, make_balancer(strategy if strategy in STRATEGIES else "no-balancing", cfg,
                                                        seed, history),
                     policies, profiles=TopicProfiles(history, topics),
                     splits=Splits(cfg, extensible=strategy == "TransferShedder") if strategy in STRATEGIES else None)
    simulated, splits, errors = [], 0, []
    snapshot_times = {int(t): i for i, t in enumerate(history.times)}
    for cycle in sim.run():
        simulated += [(cycle.ts, m["bundle"], m["source"], m["destination"]) for m in cycle.moves
                      if m["kind"] == "unload"]
        splits += len(cycle.splits)
        i = snapshot_times.get(cycle.ts)
        if i:  # the first snapshot is where the simulation starts: nothing to predict there
            live = np.flatnonzero(history.live[i])
            recorded = sim.weighted_max(history.usage[i][live], history.limits[i][live])
            errors += (np.abs(cycle.weighted_max - recorded) * 100.0).tolist()
    start, end = int(history.times[0]), int(history.times[-1])
    window = cycle_minutes(cfg) * 60_000
    truth = [u for u in truth if start <= u[0] <= end + window]  # what the simulated span could predict
    scores = match(simulated, truth, window)
    scores.update(usage_mae_points=float(np.mean(errors)) if errors else None,
                  usage_max_error_points=float(np.max(errors)) if errors else None)
    return {"cluster": cluster, "day": day, "strategy": strategy, "snapshots": len(history.times),
            "brokers": len(history.brokers), "logged_splits": logged_splits, "simulated_splits": splits, **scores,
            "targets": TARGETS, "met": _met(scores), "notes": [*notes, *run_notes]}


def _met(scores: dict) -> dict:
    """Each target: met, missed, or not measurable (no unload on one side)."""
    out = {}
    for key, target in TARGETS.items():
        value = scores.get(key)
        out[key] = None if value is None else (value <= target if key.startswith("usage") else value >= target)
    return out


def render_text(result: dict) -> str:
    def fmt(x, pct=True):
        return "–" if x is None else (f"{x:.0%}" if pct else f"{x:.1f}")

    met = {k: ("met" if v else "missed" if v is not None else "not measurable") for k, v in result["met"].items()}
    return "\n".join([
        f"{result['cluster']} {result['day']}: {result['strategy']} simulated closed-loop over {result['snapshots']} "
        f"snapshots, {result['brokers']} brokers",
        f"unloads: {result['logged_unloads']} logged, {result['simulated_unloads']} simulated, "
        f"{result['matched_unloads']} matched ({result['destinations_agree']} to the logged broker): precision "
        f"{fmt(result['precision'])} ({met['precision']}, target ≥ {TARGETS['precision']:.0%}), recall "
        f"{fmt(result['recall'])} ({met['recall']}, target ≥ {TARGETS['recall']:.0%})",
        f"splits: {result['logged_splits']} logged, {result['simulated_splits']} simulated",
        f"per-broker usage: mean absolute error {fmt(result['usage_mae_points'], False)} points "
        f"(max {fmt(result['usage_max_error_points'], False)}; {met['usage_mae_points']}, target ≤ "
        f"{TARGETS['usage_mae_points']:g})",
        *(f"note: {one_line(n)}" for n in result["notes"])])
