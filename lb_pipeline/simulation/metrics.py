"""What a simulated run cost and bought: balance over time, churn, client reconnections, convergence after events.

Load is ``getMaxResourceUsageWithWeight`` per live broker (what every modular shedder and the placement compare).
A planner reads overloaded broker-minutes and the peak first, then the spread. A broker *pinned* by one bundle one
topic carries (above ``loadBalancerBrokerOverloadedThresholdPercentage`` with that bundle serving at least half its
messages, ``engine.pinned_by_one_topic``) is hot because of where that bundle sits, whatever else moves: the spread
that tells strategies apart (``usage_std_unpinned``) and "balanced" leave such brokers out, and the pinned
broker-minutes are counted beside them. Which broker the bundle lands on (one large enough for it, or not) still
shows in the overloaded broker-minutes, which count pinned brokers too.

After a recorded event a run has *converged* once it settles (``convergence``). "Balanced", a cycle's own state,
means no live broker idle (owning no bundle), no
unpinned broker above ``loadBalancerBrokerOverloadedThresholdPercentage``, and the hottest unpinned broker within
``loadBalancerBrokerThresholdShedderPercentage`` points of the unpinned brokers' mean (ThresholdShedder's own band).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from lb_pipeline.model.config import PulsarConfig

PING_PONG_MINUTES = 30
SETTLE_CYCLES = 5  # cycles without an unload, idle broker or unpinned overloaded one: settled
TIMESERIES_COLUMNS = ["ts", "snapshot", "interpolated", "brokers", "bundles", "usage_mean", "usage_std", "usage_max",
                      "max_over_mean", "overloaded_brokers", "idle_brokers", "unloads", "placements", "reconnections",
                      "rate_recorded", "rate_served", "unowned_bundles", "balanced", "pinned_brokers", "usage_std_unpinned"]
MOVE_COLUMNS = ["ts", "bundle", "source", "destination", "reason", "kind", "clients", "swap", "ping_pong"]


def timeseries(cycles, config: PulsarConfig, snapshot_times) -> pd.DataFrame:
    over = config.get_int("loadBalancerBrokerOverloadedThresholdPercentage") / 100.0
    band = config.get_float("loadBalancerBrokerThresholdShedderPercentage") / 100.0
    snaps = set(int(t) for t in snapshot_times)
    rows = []
    for c in cycles:
        w = c.weighted_max
        mean = float(w.mean()) if len(w) else 0.0
        peak = float(w.max()) if len(w) else 0.0
        idle = int((c.bundles_owned == 0).sum())
        overloaded = int((w > over).sum())
        pinned = c.pinned if c.pinned is not None and len(c.pinned) == len(w) else np.zeros(len(w), bool)
        free = w[~pinned]
        free_mean = float(free.mean()) if len(free) else 0.0
        unloads = [m for m in c.moves if m["kind"] == "unload"]
        rows.append({
            "ts": c.ts, "snapshot": c.snapshot, "interpolated": c.ts not in snaps, "brokers": len(c.brokers),
            "bundles": int(c.bundles_owned.sum()) + c.unowned, "usage_mean": mean,
            "usage_std": float(w.std()) if len(w) else 0.0, "usage_max": peak,
            "max_over_mean": peak / mean if mean > 0 else float("nan"), "overloaded_brokers": overloaded,
            "idle_brokers": idle, "unloads": len(unloads), "placements": len(c.moves) - len(unloads),
            "reconnections": sum(m["clients"] for m in c.moves), "rate_recorded": c.rate_recorded,
            "rate_served": c.rate_served, "unowned_bundles": c.unowned,
            "balanced": idle == 0 and int((free > over).sum()) == 0
            and (float(free.max()) if len(free) else 0.0) - free_mean <= band,
            "pinned_brokers": int(pinned.sum()), "usage_std_unpinned": float(free.std()) if len(free) else 0.0})
    return pd.DataFrame(rows, columns=TIMESERIES_COLUMNS)


def moves(cycles, ping_pong_minutes: int = PING_PONG_MINUTES) -> pd.DataFrame:
    """Every move; ``ping_pong`` when an unload moves a bundle that moved within the last ``ping_pong_minutes``."""
    last: dict[str, int] = {}
    rows = []
    window = ping_pong_minutes * 60_000
    for c in cycles:
        for m in c.moves:
            before = last.get(m["bundle"])
            rows.append({"ts": c.ts, **m, "ping_pong": m["kind"] == "unload" and before is not None
                         and c.ts - before <= window})
            last[m["bundle"]] = c.ts
    return pd.DataFrame(rows, columns=MOVE_COLUMNS)


def convergence(ts: pd.DataFrame, events: list[dict], calm_cycles: int = SETTLE_CYCLES) -> list[dict]:
    """Minutes from each recorded event to the first cycle at or after it from which the run is *settled* (None: not
    before the end): no live broker idle, no unpinned broker overloaded, and no unload for ``calm_cycles`` cycles
    (or to the end of the day). A strategy whose own rule is met while the cluster is uneven (ThresholdShedder's
    band around a mean that a pinned broker raises) settles too: the spread says how even it settled."""
    out = []
    times = ts["ts"].to_numpy()
    unpinned_hot = ts["overloaded_brokers"].to_numpy() - ts.get("pinned_brokers", pd.Series(0, index=ts.index)).to_numpy()
    calm = (ts["idle_brokers"].to_numpy() == 0) & (unpinned_hot <= 0) & (ts["unloads"].to_numpy() == 0)
    # settled from k: calm for the next calm_cycles cycles, or to the end
    run = np.zeros(len(calm) + 1, np.int64)
    for k in range(len(calm) - 1, -1, -1):
        run[k] = run[k + 1] + 1 if calm[k] else 0
    settled = (run[:-1] >= np.minimum(calm_cycles, len(calm) - np.arange(len(calm)))) & calm
    for e in events:
        after = np.flatnonzero((times >= e["ts"]) & settled)
        minutes = (times[after[0]] - e["ts"]) / 60_000 if len(after) else None
        out.append({**e, "minutes_to_converge": minutes})
    return out


def grace_violations(mv: pd.DataFrame, grace_minutes: int) -> int:
    """Unloads the load manager should have held back: a bundle shed no more than
    ``loadBalancerSheddingGracePeriodMinutes`` after its previous unload (Pulsar forgets an unload only once more
    than the grace period has passed). TransferShedder's swaps are not held back by Pulsar itself, so a swap is
    never one; the unload before it still counts as the previous one."""
    unloads = mv[mv["kind"] == "unload"].sort_values("ts", kind="stable") if len(mv) else mv
    if not len(unloads):
        return 0
    gaps = unloads.groupby("bundle")["ts"].diff()
    return int(((gaps <= grace_minutes * 60_000) & ~unloads["swap"].astype(bool)).sum())


def summary(ts: pd.DataFrame, mv: pd.DataFrame, events: list[dict], interval_minutes: int,
            grace_minutes: int | None = None, splits: int = 0) -> dict:
    """``grace_minutes``: the grace period a strategy run must respect (None for the baselines); ``splits``: the
    bundles the run split itself."""
    conv = convergence(ts, events)
    done = [c["minutes_to_converge"] for c in conv if c["minutes_to_converge"] is not None]
    unloads = mv[mv["kind"] == "unload"] if len(mv) else mv
    return {
        "cycles": len(ts),
        "usage_std_mean": float(ts["usage_std"].mean()) if len(ts) else 0.0,
        "usage_std_unpinned_mean": float(ts["usage_std_unpinned"].mean()) if len(ts) else 0.0,
        "peak_usage": float(ts["usage_max"].max()) if len(ts) else 0.0,
        "pinned_broker_minutes": int(ts["pinned_brokers"].sum()) * interval_minutes,
        "max_over_mean_p95": float(np.nanpercentile(ts["max_over_mean"], 95)) if ts["max_over_mean"].notna().any() else float("nan"),
        "overloaded_broker_minutes": int(ts["overloaded_brokers"].sum()) * interval_minutes,
        "idle_broker_minutes": int(ts["idle_brokers"].sum()) * interval_minutes,
        "unloads": len(unloads), "placements": int(ts["placements"].sum()), "splits": splits,
        "ping_pongs": int(unloads["ping_pong"].sum()) if len(unloads) else 0,
        "grace_violations": grace_violations(mv, grace_minutes) if grace_minutes is not None else 0,
        "reconnections": int(ts["reconnections"].sum()),
        "events": len(conv), "events_converged": len(done),
        "minutes_to_converge_max": max(done) if done else None,
    }
