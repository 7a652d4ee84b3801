"""A bundle's arrival on a broker, seen in the report writes (``collect --every … --metadata-store …``): when the
new owner's load report first lists it, and with what rates.

A move the history imposes on the closed loop (one the leader did not log: by hand, or a lookup after an unload
elsewhere; ``logged_truth.imposed_moves``) is otherwise taken at the next snapshot. With the writes it is taken
when the new owner's first report listing the bundle was written, as the leader saw it: that report is the
leader's first sample of the bundle on its new owner (its averages restart from it where no report listed the
bundle for a moment: ``ModularLoadManagerImpl.updateBundleData``), and it often carries a burst of 2 to 6 times the
bundle's rate (docs/validation.md); the leader checks for splits right after every report write
(``handleDataNotification`` → ``updateAll`` → ``checkNamespaceBundleSplit``), so a burst past a split threshold
splits the bundle within a second of the move, before any snapshot shows it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from lb_pipeline.simulation.history import TRAFFIC

COLUMNS = ("bundle", "broker", "write_ms", "zxid", *TRAFFIC)


@dataclass(frozen=True)
class Arrival:
    t: int  # epoch ms of the write (the store's clock)
    bundle: str
    broker: str
    rates: tuple[float, float, float, float]  # the write's lastStats of the bundle, History.TRAFFIC order
    # whether no report listed the bundle for a moment before (its broker before wrote one without it first): the
    # leader then dropped its BundleData and starts it again from this report; else its averages go on
    restarted: bool = True


def first_listings(writes: pd.DataFrame) -> list[Arrival]:
    """Every write that lists a bundle under another broker than the write before that listed it (``writes``:
    ``bronze/report_writes`` rows, ``COLUMNS``; a write listing no bundle, or a deletion, as a row without one), in
    time order; a bundle's first listing is no arrival (where it was before is not known)."""
    listed = writes[writes["bundle"].notna()]
    if listed.empty:
        return []
    w = listed.sort_values(["bundle", "write_ms", "zxid"], kind="stable")
    group = w.groupby("bundle", sort=False)
    before, since = group["broker"].shift(), group["write_ms"].shift()
    moved = before.notna() & (before != w["broker"])
    every = writes.drop_duplicates(["broker", "zxid"])
    times = {b: np.sort(g["write_ms"].to_numpy()) for b, g in every.groupby("broker")}

    def dropped(broker: str, after: int, until: int) -> bool:  # a write of ``broker`` in between: without it
        t = times.get(broker, np.zeros(0))
        return bool(np.searchsorted(t, until, "left") > np.searchsorted(t, after, "right"))

    out = [Arrival(int(r.write_ms), r.bundle, r.broker, tuple(float(getattr(r, c)) for c in TRAFFIC),
                   dropped(b, int(t0), int(r.write_ms)))
           for r, b, t0 in zip(w[moved].itertuples(index=False), before[moved], since[moved])]
    return sorted(out, key=lambda a: (a.t, a.bundle))


def timed_moves(history, arrivals: list[Arrival], unloads: list[tuple[int, str, str, str]],
                window_ms: int) -> list[tuple[Arrival, int, int]]:
    """(arrival, bundle index, broker index) of the moves the leader did not make, taken when the report writes show
    them, in time order. Between two snapshots, a bundle whose last arrival is on another broker than the one the
    snapshot before shows, that broker still up at the next snapshot, and the next snapshot showing the bundle
    there or not at all (split, or gone, before it), moved then, unless the leader logged that unload
    (``unloads``: as ``logged_truth.logged`` gives them) within ``window_ms`` before: the move is the first
    report listing it there after any other broker's last. A bundle last listed where the snapshot before showed
    it, but listed elsewhere in between (the leader sent it away, a hand sent it back), moved back then. A report that still lists a bundle its broker gave up
    (written before the change reached it) is not the bundle's last arrival when the new owner writes again."""
    h = history
    index = {b: n for n, b in enumerate(h.bundles)}
    brokers = {b: k for k, b in enumerate(h.brokers)}
    logged: dict[tuple[str, str], list[int]] = {}
    for t, bundle, _, dst in unloads:
        logged.setdefault((bundle, dst), []).append(t)
    out = []
    for s in range(1, len(h.times)):
        since, until = int(h.times[s - 1]), int(h.times[s])
        inside: dict[str, list[Arrival]] = {}
        for a in arrivals:
            if since < a.t <= until:
                inside.setdefault(a.bundle, []).append(a)
        for bundle, seen in inside.items():
            n, b = index.get(bundle), brokers.get(seen[-1].broker)
            if n is None or b is None or not h.present[s - 1, n] or h.owner[s - 1, n] < 0:
                continue
            old = int(h.owner[s - 1, n])
            back = old == b and any(a.broker != seen[-1].broker for a in seen)  # sent away, then back
            if (old == b and not back) or not h.live[s][old] or (h.present[s, n] and h.owner[s, n] != b):
                continue
            if any(seen[-1].t - window_ms <= t <= until for t in logged.get((bundle, seen[-1].broker), ())):
                continue  # the leader's own unload: the loop makes its own
            last_other = max((k for k, a in enumerate(seen) if a.broker != seen[-1].broker), default=-1)
            out.append((seen[last_other + 1], n, b))
    return sorted(out, key=lambda x: (x[0].t, x[1]))


def rates_row(size: int, n: int, rates: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(a mask of bundle ``n``, an (size, 4) traffic array holding ``rates`` at ``n``): one sample of it."""
    mask = np.zeros(size, bool)
    mask[n] = True
    traffic = np.zeros((size, len(TRAFFIC)))
    traffic[n] = rates
    return mask, traffic


def arrive(sim, a: Arrival, n: int, b: int) -> None:
    """``sim`` (``engine.Simulation``) takes the imposed move of bundle ``n`` to broker ``b`` when the new owner's
    first report shows it: the owner changes, the leader's averages of the bundle take that report's rates (from
    them afresh where no report listed the bundle for a moment before, ``Arrival.restarted``),
    and the leader checks for splits as after every report write (its children placed, when configured, as after
    any split). What it moved and split goes into the next cycle's. An arrival before the snapshot it follows is
    entered, or of a bundle gone or a broker down, is left to the snapshot that shows the move."""
    from lb_pipeline.simulation.leader_view import Owners

    h, bs, i = sim.history, sim.bundles, sim.snapshot
    if i < 0 or h.snapshot_at(a.t) != i or not bs.present(i)[n] or not h.live[i][b]:
        return
    sim._now = a.t
    sim.owner[n] = b
    sim._arrived.add((n, b))
    if a.restarted:
        sim.averages.forget(n)
    sim.averages.sample(*rates_row(bs.size, n, a.rates), 1)
    if sim.splits is None:
        return
    recorded = h.traffic_at(int(h.times[i]))
    traffic = np.where(bs.present(i)[:, None], bs.traffic(recorded), 0.0)
    live_idx = np.flatnonzero(h.live[i])
    live = [h.brokers[k] for k in live_idx]
    present = bs.present(i)
    view = {"snapshot": i, "new_snapshot": False, "bundle_index": sim.bundle_index,
            "owners": Owners(bs.names, h.brokers, sim.owner, present & (sim.owner >= 0))}
    moves, splits = sim._between
    splits += sim._split(i, recorded, traffic, None, live_idx, sim.policies.state(live, a.t), view, moves)
