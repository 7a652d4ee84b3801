"""When the replays' cycles run: the configuration in force at a snapshot, the cycles a snapshot's load holds until
the next one (``loadBalancerSheddingIntervalMinutes`` / ``loadBalancerSplitIntervalMinutes``), and the brokers that
restarted since the last snapshot. Shared by the shedding and the split replays (``gold``, ``splits``)."""

from __future__ import annotations

import pandas as pd

from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import PulsarConfig

CYCLE_NOTE = "one replay cycle per snapshot"
DAY_MINUTES = 1440


def ms(ts) -> int:
    return int(pd.Timestamp(ts).timestamp() * 1000)


def config_at(config: PulsarConfig | ClusterConfigs, cluster: str | None, ts) -> PulsarConfig:
    """The configuration in force on ``cluster`` at snapshot ``ts``: Pulsar's leader reads its live configuration
    on every cycle, so a dynamic override set at noon applies from the first snapshot after it."""
    return ClusterConfigs.of_any(config).at(cluster, ms(ts))


def cycle_windows(times: list, configs: PulsarConfig | ClusterConfigs, cluster: str, interval) -> dict:
    """Snapshot time → the cycles of ``interval(config)`` minutes its load holds: to the next snapshot, the last as
    long as the one before it (the collector's cadence), a lone snapshot for a day (the replays may stop
    earlier)."""
    gaps = [(b - a).total_seconds() / 60 for a, b in zip(times, times[1:])]
    gaps = gaps + gaps[-1:] if gaps else [DAY_MINUTES]
    return {ts: max(1, int(gap // interval(config_at(configs, cluster, ts)))) for ts, gap in zip(times, gaps)}


def split_interval(config: PulsarConfig) -> int:  # minutes; an extensible broker with 0 or less does not start
    return max(1, config.get_int("loadBalancerSplitIntervalMinutes"))


def shedding_interval(config: PulsarConfig) -> int:  # minutes; with 0 or less the leader's task cannot be scheduled
    return max(1, config.get_int("loadBalancerSheddingIntervalMinutes"))


def restarted(brokers: pd.DataFrame, started: dict) -> list[str]:
    """The brokers of a snapshot whose ``startTimestamp`` differs from the one ``started`` holds (updated)."""
    out = []
    for broker, start in zip(brokers["broker"], brokers["start_timestamp_ms"]):
        if pd.notna(start) and started.setdefault(broker, start) != start:
            started[broker] = start
            out.append(broker)
    return out
