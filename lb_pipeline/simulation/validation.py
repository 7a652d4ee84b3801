"""Does the simulation predict what the cluster's own strategy did? Precision and recall of predicted unloads.

Where the history shows ownership changes that Pulsar made, the simulation of the configured strategy should make
them too. Run anchored: at every snapshot the simulated cluster takes the recorded ownership, runs the strategy
(state carried) until the next snapshot, and the bundles it unloads are compared with the bundles the next snapshot
shows on another broker — leaving out moves forced by a broker that left or restarted (those are placements, not
shedding). One step ahead from the truth each time, so one miss does not compound into the rest of the day.
"""

from __future__ import annotations

import numpy as np

from lb_pipeline.model.config import PulsarConfig, configured_strategy
from lb_pipeline.simulation.balancers import make_balancer
from lb_pipeline.simulation.engine import Simulation
from lb_pipeline.simulation.history import History
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


def predict_recorded(history: History, model: LoadModel, config: PulsarConfig, strategy: str, seed: int = 0,
                     policies: Policies | None = None) -> dict:
    """``config``: the run configuration (``run.run_config``). Returns counts, precision and recall."""
    sim = Simulation(history, model, config, make_balancer(strategy, config, seed, history), policies or Policies(),
                     anchored=True)
    predicted, destination = set(), {}
    for cycle in sim.run():
        for m in cycle.moves:
            if m["kind"] == "unload":
                predicted.add((cycle.snapshot, m["bundle"]))
                destination[(cycle.snapshot, m["bundle"])] = m["destination"]
    index = {b: n for n, b in enumerate(history.bundles)}
    # the last snapshot has no next one to check against; a bundle whose broker then left or restarted was moved
    # by that, whatever the strategy decided: neither side counts it
    predicted = {(s, b) for s, b in predicted if s < len(history.times) - 1 and history.present[s + 1, index[b]]
                 and _stayed_up(history, s, index[b])}
    recorded = recorded_unloads(history)
    hits = predicted & recorded
    same_place = sum(1 for s, b in hits if history.brokers[history.owner[s + 1, index[b]]] == destination[(s, b)])
    return {"recorded_unloads": len(recorded), "predicted_unloads": len(predicted), "matched_unloads": len(hits),
            "destinations_agree": same_place,
            "precision": len(hits) / len(predicted) if predicted else float("nan"),
            "recall": len(hits) / len(recorded) if recorded else float("nan")}


def is_validated(config: PulsarConfig, strategy: str, params: dict, seed: int) -> bool:
    """Whether a run is the cluster's own strategy as configured (seed 0): the one run validated against the record."""
    return strategy == configured_strategy(config) and not params and not seed


def validate_run(history: History, model: LoadModel, config: PulsarConfig, strategy: str, params: dict,
                 seed: int, policies: Policies | None = None) -> dict:
    """The validation figures for the run of the cluster's own strategy as configured (seed 0); empty otherwise."""
    if not is_validated(config, strategy, params, seed):
        return {}
    return predict_recorded(history, model, config, strategy, policies=policies)
