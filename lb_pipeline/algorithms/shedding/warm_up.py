"""How many shedding cycles a replayed strategy runs before its choices no longer hang on state the replay never saw.

A strategy's state starts with the leader's load manager (its election, or a restart); a replay starts it at its
first snapshot, usually later, and where the leader changes between snapshots, after cycles the snapshots did not
see. Until that unseen start has worn off, the replay's choice is an estimate:

- ThresholdShedder keeps each broker's usage as ``history × h + usage × (1 − h)`` (``h`` =
  ``loadBalancerHistoryResourcePercentage``, 0.9), seeded with a broker's usage at the first cycle that sees it. The
  replay's seed is the first snapshot's usage, the leader's the usage at its own first cycle: after ``n`` cycles a
  seed weighs ``h^n``, and the replay is an estimate until that is at most ``SEED_WEIGHT`` (29 cycles at 0.9: a seed
  100 points off moves a broker's history by at most 5). Measured on a recorded real run (docs/validation.md): the
  leader logged broker a's history as 73.3 % where the replay, seeded 2.7 minutes after the election, had 61.7 %.
  The optional lower-boundary pass steps the history twice a cycle: the count here is then an upper bound.
- AvgShedder counts the consecutive cycles each broker stays far from another
  (``loadBalancerAvgShedderHitCountHighThreshold`` 2, ``…LowThreshold`` 8); the replay's counts start at 0, so
  for that many cycles it can wait where Pulsar, counting already, moves.
- OverloadShedder and UniformLoadShedder keep no state but the grace period, which the replay takes from what the
  cluster unloaded; TransferShedder is not modular and is not counted here.
"""

from __future__ import annotations

import math

from lb_pipeline.model.config import PulsarConfig

SEED_WEIGHT = 0.05  # a seed weighing at most this no longer decides: 5 points of a 100-point difference
FOREVER = 10**9  # h ≥ 1: the seed is never forgotten


def warm_up_cycles(strategy: str, config: PulsarConfig) -> int:
    """The cycles ``strategy`` runs from its state's start before the replay's choice stops being an estimate."""
    if strategy == "ThresholdShedder":
        h = config.get_float("loadBalancerHistoryResourcePercentage")
        if h <= 0:
            return 0
        if h >= 1:
            return FOREVER
        return math.ceil(math.log(SEED_WEIGHT) / math.log(h))
    if strategy == "AvgShedder":
        return max(0, config.get_int("loadBalancerAvgShedderHitCountHighThreshold"),
                   config.get_int("loadBalancerAvgShedderHitCountLowThreshold"))
    return 0


def seed_weight(strategy: str, config: PulsarConfig, cycles: int) -> float | None:
    """ThresholdShedder: what the unseen seed still weighs after ``cycles`` cycles; other strategies: None."""
    if strategy != "ThresholdShedder":
        return None
    h = config.get_float("loadBalancerHistoryResourcePercentage")
    return 0.0 if h <= 0 else 1.0 if h >= 1 else h ** cycles


def estimate_note(strategy: str, config: PulsarConfig, cycles: int) -> str | None:
    """Why a choice made at the ``cycles``-th cycle of the replay's state is an estimate, or None if it is not."""
    if cycles > warm_up_cycles(strategy, config):
        return None
    weight = seed_weight(strategy, config, cycles)
    if weight is not None:
        return (f"an estimate: cycle {cycles} of the replay's ThresholdShedder history, seeded at its first snapshot, "
                f"not at the leader's first cycle; that seed still weighs {weight:.0%} of each broker's usage")
    return (f"an estimate: cycle {cycles} of the replay's AvgShedder hit counts, which start at 0 where the leader's "
            f"may have been counting already")
