"""The leader's averages from every report write, bundle by bundle, in closed form between the writes that change
what it samples: what ``leader_samples.replay`` computes sample by sample, in time linear in the writes' rows.

The leader samples every bundle at each of its tasks (``leader_samples.schedule``: an update per report write, one
more before it stores its copies), from every report as last written. Between two writes that change what some
report says of a bundle (a write of a broker that lists it or did), every task samples the same values, so the
``k`` samples of a stretch are one ``time_average.update`` of ``k``. A 100-broker cluster makes about 1.7 million
tasks a day over thousands of bundles, which the sample-by-sample replay (about 10 µs a bundle a task) could not
finish; here each bundle costs a step per write of its owners and per snapshot asked for.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate

from lb_pipeline.algorithms import time_average as ta
from lb_pipeline.model.javahash import concurrent_hash_map_order
from lb_pipeline.simulation.leader_samples import BATCH_MS, BROKERS, BUNDLE_DATA, STATS, WINDOWS, schedule, visible


def replay(writes: list[dict], at=(), busy=()) -> dict[int, dict[str, dict]]:
    """The leader's averages at each time of ``at`` (epoch ms), as ``leader_samples.replay`` gives them: bundle →
    window → (numSamples, FIELDS values)."""
    timeline, events = schedule(writes, busy)
    times = [w["mtime"] for w in timeline]
    views, samples, captures = [], [], {}
    stored: dict[str, list[tuple[int, dict]]] = {}
    keys: list[tuple[int, tuple[str, ...]]] = [(0, ())]  # (event index from which, the report map's brokers)
    present: dict[str, None] = {}
    applied, batch, pending = 0, None, sorted(at)
    for j, (t, kind, w) in enumerate(events):
        while pending and pending[0] < w["mtime"]:
            captures.setdefault(j, []).append(pending.pop(0))
        if kind == 0:
            sample = batch is None or w["mtime"] - batch > BATCH_MS
            batch = w["mtime"] if sample else batch
            views.append(applied)
            samples.append(1 if sample else 0)
            stored.setdefault(w["path"][len(BUNDLE_DATA):], []).append((j, w["data"]))
            continue
        batch = None
        now = visible(timeline, times, applied, t, w)
        before = tuple(present)
        for r in timeline[applied:now]:
            broker = r["path"][len(BROKERS):]
            if r.get("data") is None:
                present.pop(broker, None)
            else:
                present.setdefault(broker, None)
        if tuple(present) != before:
            keys.append((j, tuple(present)))
        applied = now
        views.append(applied)
        samples.append(1)
    end = len(events)
    captures.setdefault(end, []).extend(pending)
    counted = [0, *accumulate(samples)]  # sample tasks before each event index
    order_from = [j for j, _ in keys]

    # per bundle: the writes of every broker that ever lists it, each at the first task that reads it
    by_broker: dict[str, list[int]] = {}
    listers: dict[str, set[str]] = {}
    for i, r in enumerate(timeline):
        broker = r["path"][len(BROKERS):]
        by_broker.setdefault(broker, []).append(i)
        for bundle in ((r.get("data") or {}).get("lastStats") or {}):
            listers.setdefault(bundle, set()).add(broker)
    states: dict[int, dict[str, dict]] = {t: {} for ts in captures.values() for t in ts}
    fixed = sorted({*captures, *(j for j, _ in keys)})
    for bundle, brokers in listers.items():
        changes: dict[int, list[int]] = {}
        for broker in brokers:
            for i in by_broker[broker]:
                changes.setdefault(bisect_right(views, i), []).append(i)
        copies = dict(stored.get(bundle, ()))
        _Bundle(bundle, timeline, changes, copies, counted, keys, order_from).walk(
            sorted({*changes, *copies, *fixed}), end, captures, states)
    return states


class _Bundle:
    def __init__(self, bundle, timeline, changes, copies, counted, keys, order_from):
        self.bundle, self.timeline, self.changes, self.copies = bundle, timeline, changes, copies
        self.counted, self.keys, self.order_from = counted, keys, order_from
        self.listing: dict[str, dict] = {}  # broker → the bundle's stats in its report as last written
        self.averages: dict | None = None  # window → (n, values); None while the leader holds none
        self.copy: dict | None = None  # its stored copy, until the leader drops the bundle

    def walk(self, points: list[int], end: int, captures: dict[int, list[int]], states: dict) -> None:
        cur = 0
        for j in [*points, end]:
            if j < cur:
                continue
            self._samples(cur, j)
            for t in captures.get(j, ()):
                if self.averages is not None:
                    states[t][self.bundle] = {w: (n, list(v)) for w, (n, v) in self.averages.items()}
            if j >= end:
                break
            for i in sorted(self.changes.get(j, ())):
                r = self.timeline[i]
                stats = ((r.get("data") or {}).get("lastStats") or {}).get(self.bundle)
                broker = r["path"][len(BROKERS):]
                if stats is None:
                    self.listing.pop(broker, None)
                else:
                    self.listing[broker] = stats
            self._samples(j, j + 1)
            if j in self.copies:
                self.copy = self.copies[j]
            cur = j + 1

    def _samples(self, j0: int, j1: int) -> None:
        """The leader's sample tasks among events ``j0 .. j1 - 1``, the reports' view of the bundle unchanged."""
        k = self.counted[j1] - self.counted[j0]
        if k <= 0:
            return
        if not self.listing:  # no report lists it: dropped, with its stored copy (a copy of a bundle it never held
            if self.averages is not None:  # stays, until the bundle is listed)
                self.averages, self.copy = None, None
            return
        if self.averages is None:
            self.averages = self._start()
        brokers = list(self.listing)
        if len(brokers) > 1:  # listed twice (old and new owner): sampled in the leader's broker map order
            present = self.keys[bisect_right(self.order_from, j0) - 1][1]
            brokers = [b for b in concurrent_hash_map_order(present) if b in self.listing]
            for _ in range(k):
                for b in brokers:
                    self._update(self.listing[b], 1)
            return
        self._update(self.listing[brokers[0]], k)

    def _update(self, stats: dict, k: int) -> None:
        for w, size in WINDOWS.items():
            n, values = self.averages[w]
            out = [ta.update(n, v, float(stats[STATS[f]]), k, size) for f, v in zip(ta.FIELDS, values)]
            self.averages[w] = (out[0][0], [v for _, v in out])

    def _start(self) -> dict:
        if self.copy is None:
            return {w: (0, [ta.DEFAULT_SEED[f] for f in ta.FIELDS]) for w in WINDOWS}
        return {w: (int(self.copy[f"{w}TermData"]["numSamples"]),
                    [float(self.copy[f"{w}TermData"][STATS[f]]) for f in ta.FIELDS]) for w in WINDOWS}
