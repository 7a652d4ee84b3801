"""A shedding strategy over a snapshot whose load holds until the strategy first unloads.

The leader sheds every ``loadBalancerSheddingIntervalMinutes`` (``LoadSheddingTask`` on the modular manager,
``UnloadScheduler`` on the extensible one); a snapshot is taken once an hour or so. What a strategy carries from
cycle to cycle advances once a cycle: ThresholdShedder's usage EMA (``loadBalancerHistoryResourcePercentage`` a
step), AvgShedder's and TransferShedder's hit counts, the grace period. One cycle per snapshot made them advance
once an hour: after a jump in load ThresholdShedder took hours to react where Pulsar takes minutes, and
TransferShedder's default hit count (3) held an unload back four snapshots instead of four minutes.

Here a strategy runs the cycles that fit before the next snapshot on the snapshot's load, until the first cycle
that unloads: that cycle's unloads are its decision for the snapshot. It stops there: once bundles move, the load
is no longer the snapshot's (the next snapshot shows it), so the cycles after are not guessed at; the strategy's
state is what that cycle left. The modular strategies read their time averages as the snapshot has them (the
leader updates them only when brokers report).

A day's snapshots hold at most a day of cycles (1,440 at the default interval): every cycle is run (on preset M
a cycle that unloads nothing costs the five strategies about a millisecond together).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lb_pipeline.algorithms.shedding.common import SheddingResult


@dataclass(frozen=True)
class HeldCycles:
    result: SheddingResult  # of the cycle that unloaded, else of the last cycle
    cycle: int  # 1-based, within the window


def held_cycles(run: Callable[[int], SheddingResult], start_ms: int, cycles: int, interval_ms: int) -> HeldCycles:
    """Run ``run(now_ms)`` at ``start_ms``, ``start_ms + interval_ms``, … for at most ``cycles`` (at least one)
    cycles, stopping after the first that unloads."""
    result, cycle = SheddingResult(), 0
    for cycle in range(1, max(1, cycles) + 1):
        result = run(start_ms + (cycle - 1) * interval_ms)
        if result.unloads:
            break
    return HeldCycles(result, cycle)
