"""Does the simulation predict what the cluster's own strategy did? Precision and recall of predicted unloads.

Where the history shows ownership changes that Pulsar made, the simulation of the configured strategy should make
them too. Run anchored: at every snapshot the simulated cluster takes the recorded ownership, runs the strategy the
leader ran then (state carried; a fresh instance where the leader runs a new load manager) until the next snapshot,
and the bundles it unloads are compared with the bundles the next snapshot shows on another broker — leaving out
moves forced by a broker that left or restarted (those are placements, not shedding). One step ahead from the truth
each time, so one miss does not compound into the rest of the day.

Where the snapshots carry the leader's log (``bronze/lb_events``), the truth is what the leader logged, not every
change of owner (a move by hand, or a lookup after an unload elsewhere, is no unload to predict), and the
simulation runs on the closed loop's inputs (``real_validation.score``): the leader's cycles as it logged them, its
averages, the brokers' reports as last written, ThresholdShedder's history where the leader logged it.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from lb_pipeline.model.cluster_configs import Change
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.load_manager import configured_strategy
from lb_pipeline.simulation.balancers import STRATEGIES, Balancer, make_balancer
from lb_pipeline.simulation.engine import Simulation
from lb_pipeline.simulation.history import History
from lb_pipeline.simulation.leader_averages import LeaderAverages
from lb_pipeline.simulation.load_model import LoadModel
from lb_pipeline.simulation.policies import Policies


def _stayed_up(h: History, s: int, n: int) -> bool:
    """The recorded owner of bundle ``n`` at snapshot ``s`` is still up, not restarted, at ``s + 1``."""
    b = int(h.owner[s, n])
    return b >= 0 and bool(h.live[s + 1, b]) and h.start[s + 1, b] == h.start[s, b]


def recorded_unloads(history: History) -> set[tuple[int, str]]:
    """(snapshot, bundle) of bundles that moved between that snapshot and the next while their broker stayed up."""
    h, out = history, set()
    for s in range(len(h.times) - 1):
        both = h.present[s] & h.present[s + 1]
        moved = both & (h.owner[s] >= 0) & (h.owner[s + 1] >= 0) & (h.owner[s] != h.owner[s + 1])
        out |= {(s, h.bundles[n]) for n in np.flatnonzero(moved).tolist() if _stayed_up(h, s, n)}
    return out


class AsRun(Balancer):
    """The cluster's own load manager under each cycle's configuration (``Simulation.config_at``): the strategy that
    configuration names, a new instance with fresh state where it changes (its leader created a new load manager:
    ``model.at_start``); a plugin's strategy, which cannot be replayed, unloads nothing."""

    def __init__(self, config: PulsarConfig, seed: int):
        self.seed = seed
        self.restart(config)

    def restart(self, config):
        self.strategy = None
        self._for(config)

    def _for(self, config: PulsarConfig) -> Balancer:
        strategy = configured_strategy(config)
        if strategy != self.strategy:
            self.strategy = strategy
            self.current = make_balancer(strategy if strategy in STRATEGIES else "no-balancing", config, self.seed)
            self.name, self.placement = strategy, self.current.placement
        return self.current

    def unloads(self, load, config, now_ms, state, view):
        return self._for(config).unloads(load, config, now_ms, state, view)

    def place(self, bundle, load, config, state, view):
        return self._for(config).place(bundle, load, config, state, view)


def logged_unloads(history: History, events: list[dict]) -> dict[tuple[int, str], str]:
    """(snapshot, bundle) → destination of the unloads the leader logged, each under the snapshot its cycle
    followed, before the history's last snapshot."""
    from lb_pipeline.simulation.logged_truth import logged

    last = len(history.times) - 1
    return {(s, bundle): dst for t, bundle, _, dst in logged(events)[0]
            if 0 <= (s := history.snapshot_at(t)) < last}


def predict_recorded(history: History, model: LoadModel, config: PulsarConfig, strategy: str, seed: int = 0,
                     policies: Policies | None = None, changes: list[Change] | None = None,
                     restarts: list[int] = (), events: list[dict] | None = None,
                     leader: LeaderAverages | None = None) -> dict:
    """``config``: the run configuration (``run.run_config``). ``changes``: the configurations the leader ran over
    the night (``ClusterConfigs.changes``, each as ``run.run_config`` makes it), each snapshot then simulated under
    its own, and the snapshots under a plugin's strategy left out on both sides; ``restarts``: the times of the
    snapshots whose leader runs a new load manager (``ClusterConfigs.leader_restarts``), where the strategy starts
    afresh. ``events``: the leader's logged events (``bronze/lb_events`` rows; None where no log was collected),
    the truth where given; ``leader``: its averages (``leader_averages``). Returns counts, precision, recall and
    what they are scored against (``validated_against``: ``log`` or ``ownership``)."""
    at = None
    if changes and len(changes) > 1:
        times, configs = [ms for ms, _ in changes], [c for _, c in changes]
        at = lambda t: configs[max(bisect_right(times, t) - 1, 0)]  # noqa: E731
        balancer = AsRun(at(int(history.times[0])), seed)
    else:
        balancer = make_balancer(strategy, config, seed, history)
    sim = Simulation(history, model, config, balancer, policies or Policies(), anchored=True, config_at=at,
                     leader_restarts=history.snapshots_at(restarts), **_leader_inputs(history, config, strategy,
                                                                                      balancer, events, leader))
    predicted, destination = set(), {}
    for cycle in sim.run():
        for m in cycle.moves:
            if m["kind"] == "unload":
                predicted.add((cycle.snapshot, m["bundle"]))
                destination[(cycle.snapshot, m["bundle"])] = m["destination"]
    index = {b: n for n, b in enumerate(history.bundles)}
    # the last snapshot has no next one to check against; without the leader's log, a bundle whose broker then left
    # or restarted was moved by that, whatever the strategy decided, and one split or gone by the next snapshot
    # cannot be followed: neither side counts it (the log says what the leader unloaded, whatever came after)
    last = len(history.times) - 1
    predicted = {(s, b) for s, b in predicted if s < last and (events is not None or (
        history.present[s + 1, index[b]] and _stayed_up(history, s, index[b])))}
    if events is not None:
        went = logged_unloads(history, events)
        recorded = set(went)
    else:
        recorded = recorded_unloads(history)
        went = {(s, b): history.brokers[history.owner[s + 1, index[b]]] for s, b in recorded}
    if at is not None:  # a plugin's moves are not the simulation's to predict
        recorded = {(s, b) for s, b in recorded if configured_strategy(at(int(history.times[s]))) in STRATEGIES}
    hits = predicted & recorded
    same_place = sum(1 for key in hits if went[key] == destination[key])
    return {"recorded_unloads": len(recorded), "predicted_unloads": len(predicted), "matched_unloads": len(hits),
            "destinations_agree": same_place,
            "precision": len(hits) / len(predicted) if predicted else float("nan"),
            "recall": len(hits) / len(recorded) if recorded else float("nan"),
            "validated_against": "ownership" if events is None else "log"}


def _leader_inputs(history: History, config: PulsarConfig, strategy: str, balancer: Balancer,
                   events: list[dict] | None, leader: LeaderAverages | None) -> dict:
    """The closed loop's inputs from the leader's log and averages (``real_validation.score``), as ``Simulation``
    keywords; ThresholdShedder's logged history handed to ``balancer``."""
    from lb_pipeline.algorithms.shedding import logged_history
    from lb_pipeline.algorithms.shedding.driver import MODULAR_STRATEGIES
    from lb_pipeline.simulation.logged_truth import logged_schedule

    if events is None:
        return {"leader": leader}
    schedule = logged_schedule(history, config, events)
    if strategy == "ThresholdShedder" and hasattr(balancer, "take_log"):
        balancer.take_log(*logged_history.from_events(events))
    return {"leader": leader, "schedule": schedule, "residuals": True, "reporter": strategy in MODULAR_STRATEGIES}


def is_validated(config: PulsarConfig, strategy: str, params: dict, seed: int) -> bool:
    """Whether a run is the cluster's own strategy as configured (seed 0): the one run validated against the record."""
    return strategy == configured_strategy(config) and not params and not seed


def validate_run(history: History, model: LoadModel, config: PulsarConfig, strategy: str, params: dict,
                 seed: int, policies: Policies | None = None, changes: list[Change] | None = None,
                 restarts: list[int] = (), events: list[dict] | None = None,
                 leader: LeaderAverages | None = None) -> dict:
    """The validation figures for the run of the cluster's own strategy as configured (seed 0); empty otherwise."""
    if not is_validated(config, strategy, params, seed):
        return {}
    return predict_recorded(history, model, config, strategy, policies=policies, changes=changes, restarts=restarts,
                            events=events, leader=leader)
