"""What the leader logged, as the truth the simulation is scored against: its unloads and completed splits
(``logged``), the moves the history imposes because the leader did not make them (``imposed_moves``), its shedding
cycles (``logged_schedule``), and how simulated unloads are matched to logged ones (``pairs``, ``match``,
``warm_up``, ``matched_splits``). ``real_validation`` scores the closed loop with them, ``validation`` the anchored
run."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lb_pipeline.simulation.engine import cycle_minutes
from lb_pipeline.snapshots import leader_cycle


def logged(events) -> tuple[list[tuple[int, str, str, str]], list[tuple[int, str]]]:
    """(unloads as (ms, bundle, from, to), the splits the leader completed as (ms, bundle)) of ``bronze/lb_events``
    rows."""
    unloads, splits = set(), set()
    for r in events:
        ms = ts_ms(r["event_ts"])
        if r["kind"] == "unload":
            unloads.add((ms, r["bundle"], r["from_broker"], r["to_broker"]))
        elif r["kind"] == "split-done":
            splits.add((ms, r["bundle"]))
    return sorted(unloads), sorted(splits)


def ts_ms(ts) -> int:
    """Epoch ms of a timestamp as the tables hold them (``event_ts``, ``snapshot_ts``)."""
    return int(pd.Timestamp(ts).timestamp() * 1000)


def matched_splits(simulated: list[tuple[int, str]], truth: list[tuple[int, str]]) -> int:
    """Logged splits the simulation made too: the same bundle, at any time of the span (a split's trigger reads
    long-term averages, so its minute says little), each at most once."""
    left = [b for _, b in simulated]
    hits = 0
    for _, bundle in truth:
        if bundle in left:
            left.remove(bundle)
            hits += 1
    return hits


def imposed_moves(history, truth: list[tuple[int, str, str, str]]) -> dict[int, list[tuple[int, int]]]:
    """Ownership changes between consecutive snapshots that no logged unload of the leader explains (its old owner
    still up): the history imposes them on the simulation at the later snapshot. A bundle the leader sent away and a
    hand sent back within one interval is one too, though both snapshots show it on the same broker (the broker it
    left by hand is the last unload's destination)."""
    out: dict[int, list[tuple[int, int]]] = {}
    index = {b: k for k, b in enumerate(history.brokers)}
    for s in range(1, len(history.times)):
        since, until = int(history.times[s - 1]), int(history.times[s])
        unloaded = {(bundle, src) for t, bundle, src, _ in truth if since < t <= until}
        last = {bundle: (src, dst) for t, bundle, src, dst in sorted(truth) if since < t <= until}
        before, now = history.owner[s - 1], history.owner[s]
        for n in np.flatnonzero((before >= 0) & (now >= 0)).tolist():
            old, bundle = int(before[n]), history.bundles[n]
            if old != int(now[n]):
                moved = (bundle, history.brokers[old]) not in unloaded
            else:  # the same owner: moved only if the leader had sent it away meanwhile
                src, dst = last.get(bundle, (None, None))
                moved, old = src == history.brokers[old] and dst in index, index.get(dst, old)
            if moved and history.live[s][old]:
                out.setdefault(s, []).append((n, int(now[n])))
    return out


def pairs(simulated: list[tuple[int, str, str, str]], truth: list[tuple[int, str, str, str]],
          window_ms: int) -> list[tuple[int, int]]:
    """(logged index, simulated index) of each logged unload matched, at most once, by a simulated unload of the same
    bundle and source within ``window_ms``."""
    used, out = set(), []
    for j, (t, bundle, src, _) in enumerate(truth):
        for k, (ts, b, s, _) in enumerate(simulated):
            if k not in used and b == bundle and s == src and abs(ts - t) <= window_ms:
                used.add(k)
                out.append((j, k))
                break
    return out


def match(simulated: list[tuple[int, str, str, str]], truth: list[tuple[int, str, str, str]], window_ms: int) -> dict:
    """Each logged unload matched at most once (``pairs``); precision over the simulated unloads inside the logged
    span."""
    found = pairs(simulated, truth, window_ms)
    hits, same_place = len(found), sum(simulated[k][3] == truth[j][3] for j, k in found)
    hit_log, hit_sim = {j for j, _ in found}, {k for _, k in found}
    alone = ([u[0] for j, u in enumerate(truth) if j not in hit_log]
             + [u[0] for k, u in enumerate(simulated) if k not in hit_sim])
    return {"logged_unloads": len(truth), "simulated_unloads": len(simulated), "matched_unloads": hits,
            "destinations_agree": same_place,
            # where the loop first parted from the record: the earliest unload made on one side only (None: never)
            "first_difference_ms": min(alone) if alone else None,
            "precision": hits / len(simulated) if simulated else None,
            "recall": hits / len(truth) if truth else None}


def warm_up(simulated: list[tuple[int, str, str, str]], truth: list[tuple[int, str, str, str]], window_ms: int,
            settled_from: int | None, logged_from: dict[str, int] | None = None) -> dict:
    """The simulated unloads made before the strategy's state, started at the first snapshot, could have caught up
    with the leader's (``warm_up.warm_up_cycles``; ``settled_from``: the time of the first cycle after that window,
    None if the span ends inside it) and how many of them matched; precision and recall of the rest, from the same
    matching. ``logged_from``: broker → when the loop first took its state from the leader's log
    (``logged_history``): an unload from it after that is the leader's state, not an estimate, simulated or logged
    (a logged one half a cycle after it: the cycle after the line)."""
    found = pairs(simulated, truth, window_ms)
    hit_sim, hit_log = {k for _, k in found}, {j for j, _ in found}
    logged_from = logged_from or {}

    def settled(u, after: int = 0) -> bool:
        return (settled_from is not None and u[0] >= settled_from) or u[2] in logged_from and logged_from[u[2]] + after < u[0]

    warm = {k for k, u in enumerate(simulated) if not settled(u)}
    out = {"warming_up": len(warm), "warming_up_matched": len(warm & hit_sim),
           "settled_precision": None, "settled_recall": None}
    later = [k for k in range(len(simulated)) if k not in warm]
    logged_later = [j for j, u in enumerate(truth) if settled(u, window_ms // 2)]
    out["settled_precision"] = sum(k in hit_sim for k in later) / len(later) if later else None
    out["settled_recall"] = sum(j in hit_log for j in logged_later) / len(logged_later) if logged_later else None
    return out


def logged_schedule(history, config, events: list[dict]) -> list[int] | None:
    """The leader's cycles over the history's span, from its log (``leader_cycle.logged_cycles``); None where the
    log holds neither a cycle nor an election."""
    window = cycle_minutes(config) * 60_000
    start, end = int(history.times[0]), int(history.times[-1])
    return leader_cycle.logged_cycles([(ts_ms(r["event_ts"]), r["kind"]) for r in events], window, start,
                                      end + window // 2)
