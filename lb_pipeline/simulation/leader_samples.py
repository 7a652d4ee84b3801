"""The modular leader's per-bundle averages rebuilt sample by sample from every load report the brokers wrote.

A probe record (``tests/fixtures/probe_reports.py``, ``record-real.sh`` with ``PROBE=1``) holds every write of each
broker's load report (``/loadbalance/brokers/<broker>``) and of the leader's stored ``BundleData``
(``/loadbalance/bundle-data/...``), in the metadata store's order (``zxid``). The leader (``ModularLoadManagerImpl``,
Pulsar 4.0) samples every bundle some report lists, from that report's ``lastStats``:

* on each report write (``handleDataNotification`` → ``updateAll`` → ``updateBundleData``), and once more just
  before it stores its copies (``writeBundleDataOnZooKeeper``, every ``loadBalancerResourceQuotaUpdateIntervalMinutes``);
* a bundle no report lists is dropped and its stored copy deleted; a bundle first listed takes its stored copy if
  there is one, else Pulsar's default seed, then the sample (``getBundleDataOrDefault``).

``replay`` applies exactly that with ``time_average.update`` and sets each stored copy beside the rebuilt one, and
lists each move's first samples on the new owner next to the rates the old owner reported before it: the rates a
moved bundle shows right after a move, which no snapshot a minute catches (``docs/validation.md``).
"""

from __future__ import annotations

import gzip
import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from lb_pipeline.algorithms import time_average as ta
from lb_pipeline.algorithms.splits.triggers import modular_split_candidates
from lb_pipeline.model.bundles import split_bundle_name
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.javahash import concurrent_hash_map_order

BROKERS = "/loadbalance/brokers/"
BUNDLE_DATA = "/loadbalance/bundle-data/"
# the field of each of time_average.FIELDS in a report's lastStats and in a stored TimeAverageMessageData
STATS = {"msg_rate_in": "msgRateIn", "msg_rate_out": "msgRateOut", "msg_throughput_in": "msgThroughputIn",
         "msg_throughput_out": "msgThroughputOut"}
WINDOWS = {"short": ta.SHORT_SAMPLES, "long": ta.LONG_SAMPLES}
BATCH_MS = 3000  # the stored copies of one writeBundleDataOnZooKeeper come within this of each other
TASK_MS = 20  # an updateAll without a split: the leader's thread is free again within this
HOLD_MS = 300  # a split logged within this of a task's start is that task's check


def read(path: str | Path) -> list[dict]:
    """The probe's writes, in the store's order."""
    path = Path(path)
    with (gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")) as f:
        return sorted((json.loads(line) for line in f if line.strip()), key=lambda w: w["zxid"])


@dataclass(frozen=True)
class StoredCheck:
    """One stored ``BundleData`` beside the rebuilt one at the moment it was written (rates: in + out, msg/s)."""
    bundle: str
    mtime: int
    window: str
    stored_samples: int
    rebuilt_samples: int
    stored_rate: float
    rebuilt_rate: float

    @property
    def relative_error(self) -> float:
        return abs(self.rebuilt_rate - self.stored_rate) / max(abs(self.stored_rate), 1e-9)


@dataclass(frozen=True)
class FirstSample:
    """A bundle's first sample on the broker it moved to, beside what its old owner last reported (in + out msg/s)."""
    bundle: str
    moved_ms: int  # the store's time of the new owner's first report that lists it
    source: str
    destination: str
    before: float  # median of the old owner's last (up to five) samples
    first: float  # the new owner's first
    second: float | None  # and its next, if any
    restarted: bool  # the leader had dropped the bundle's averages: the first sample is its whole history

    @property
    def ratio(self) -> float:
        return self.first / self.before if self.before > 0 else float("nan")


class _Leader:
    def __init__(self):
        self.reports: dict[str, dict] = {}  # broker → lastStats, as last written
        self.stored: dict[str, dict] = {}  # bundle → the stored copy last written (until the leader deletes it)
        self.averages: dict[str, dict[str, tuple[int, list[float]]]] = {}  # bundle → window → (n, FIELDS)

    def _start(self, bundle: str) -> dict[str, tuple[int, list[float]]]:
        copy = self.stored.get(bundle)
        if copy is None:
            return {w: (0, [ta.DEFAULT_SEED[f] for f in ta.FIELDS]) for w in WINDOWS}
        return {w: (int(copy[f"{w}TermData"]["numSamples"]), [float(copy[f"{w}TermData"][STATS[f]]) for f in ta.FIELDS])
                for w in WINDOWS}

    def sample(self) -> set[str]:
        """``updateBundleData``; returns the bundles whose averages started (again) with this sample."""
        active, started = set(), set()
        for broker in concurrent_hash_map_order(self.reports):  # loadData's brokers: a bundle two reports list
            for bundle, s in self.reports[broker].items():       # (old and new owner) is sampled in this order
                active.add(bundle)
                if bundle not in self.averages:
                    self.averages[bundle] = self._start(bundle)
                    started.add(bundle)
                current = self.averages[bundle]
                for w, size in WINDOWS.items():
                    n, values = current[w]
                    out = [ta.update(n, v, float(s[STATS[f]]), 1, size) for f, v in zip(ta.FIELDS, values)]
                    current[w] = (out[0][0], [v for _, v in out])
        for bundle in set(self.averages) - active:
            del self.averages[bundle]
            self.stored.pop(bundle, None)
        return started


def _rate(values) -> float:
    return values[ta.FIELDS.index("msg_rate_in")] + values[ta.FIELDS.index("msg_rate_out")]


def schedule(writes: list[dict], busy=()) -> tuple[list[dict], list[tuple[int, int, dict]]]:
    """The report writes in the store's order, and the leader's work in the order it did it: ``(time, 0, write)``
    for each stored ``BundleData`` (another thread, at its time), ``(time, 1, write)`` for each update of the
    brokers' reports, at the time its thread ran it.

    Each report write (and each broker report created or deleted: a ``Created`` or ``Deleted`` notification and the
    parent's ``ChildrenChanged``, two tasks) queues an ``updateAll`` on the leader's single load-manager thread, which
    reads the reports current when it runs. ``busy``: (start, end) epoch ms during which a split held that thread
    (its log's split lines); a task queued behind one runs when it ends, and a split that begins within ``HOLD_MS``
    of a task's start is that task's."""
    timeline, tasks = [], []
    for w in writes:
        if w["path"].startswith(BROKERS):
            timeline.append(w)
            copies = 2 if w.get("data") is None or w.get("version") == 0 else 1
            tasks += [w] * copies
    pending, free, runs = sorted(busy), 0, []
    for w in tasks:
        start = max(w["mtime"], free)
        end = start + TASK_MS
        while pending and pending[0][0] < start:
            pending.pop(0)
        while pending and pending[0][0] <= end + HOLD_MS:
            end = max(end, pending.pop(0)[1])
        free = end
        runs.append((start, w))
    events = [(w["mtime"], 0, w) for w in writes if w["path"].startswith(BUNDLE_DATA)]
    events += [(start, 1, w) for start, w in runs]
    return timeline, sorted(events, key=lambda e: (e[0], e[1]))


def visible(timeline: list[dict], times: list[int], applied: int, t: int, w: dict) -> int:
    """How many of the report writes a task of ``w`` run at ``t`` reads, ``applied`` of them read before."""
    while applied < len(timeline) and (times[applied] <= t or timeline[applied] is w):
        applied += 1
    return applied


def _tasks(writes: list[dict], busy=()):
    """``schedule``'s work as ``("stored", write, None)`` and ``("report", write, reports)``, each report update
    with the reports as they stood when the leader's thread ran it (broker → ``lastStats``)."""
    timeline, events = schedule(writes, busy)
    times = [w["mtime"] for w in timeline]
    reports: dict[str, dict] = {}
    applied = 0
    for t, kind, w in events:
        if kind == 0:
            yield "stored", w, None
            continue
        now = visible(timeline, times, applied, t, w)
        for r in timeline[applied:now]:
            if r.get("data") is None:
                reports.pop(r["path"][len(BROKERS):], None)
            else:
                reports[r["path"][len(BROKERS):]] = r["data"].get("lastStats") or {}
        applied = now
        yield "report", w, dict(reports)


def busy_from_log(rows: list[dict]) -> list[tuple[int, int]]:
    """When splits held the leader's load-manager thread, from its logged events (``bronze/lb_events`` rows:
    ``split-candidate``, ``split``, ``split-done``, ``split-failed``): from a check's first candidate line to the end of
    its last split, epoch ms."""
    out, start = [], None
    for r in sorted(rows, key=lambda r: r["event_ts"]):
        t = round(r["event_ts"].timestamp() * 1000)
        if r["kind"] == "split-candidate" and start is None:
            start = t
        elif r["kind"] in ("split-done", "split-failed") and start is not None:
            if out and start <= out[-1][1] + 5:
                out[-1] = (out[-1][0], max(out[-1][1], t))
            else:
                out.append((start, t))
            start = None
    return out


def replay(writes: list[dict], at=(), busy=()) -> tuple[list[StoredCheck], list[FirstSample], dict[int, dict]]:
    """Every stored copy beside the rebuilt averages, every move's first samples on its new owner, and the leader's
    averages as they stood at each time of ``at`` (epoch ms): bundle → window → (numSamples, FIELDS). ``busy``: see
    ``_tasks``."""
    leader = _Leader()
    pending, states = sorted(at), {}
    checks: list[StoredCheck] = []
    seen: dict[str, list[tuple[str, float, bool]]] = {}  # bundle → its samples: (broker, rate, started)
    moves: list[tuple[str, int, str, str, int]] = []  # bundle, time, source, destination, index of its first sample
    batch, last = None, {}
    for kind, w, reports in _tasks(writes, busy):
        while pending and pending[0] < w["mtime"]:
            states[pending.pop(0)] = {b: dict(v) for b, v in leader.averages.items()}
        if kind == "stored":
            if batch is None or w["mtime"] - batch > BATCH_MS:
                batch = w["mtime"]
                leader.sample()
            bundle, copy = w["path"][len(BUNDLE_DATA):], w["data"]
            rebuilt = leader.averages.get(bundle)
            if rebuilt is not None:
                for name in WINDOWS:
                    stored = copy[f"{name}TermData"]
                    checks.append(StoredCheck(bundle, w["mtime"], name, int(stored["numSamples"]), rebuilt[name][0],
                                              float(stored["msgRateIn"]) + float(stored["msgRateOut"]),
                                              _rate(rebuilt[name][1])))
            leader.stored[bundle] = copy
            continue
        batch = None
        broker = w["path"][len(BROKERS):]
        stats = (w.get("data") or {}).get("lastStats") or {}
        if last.get(broker) is not w:  # the write's own stats, once (a created or deleted report queues two tasks)
            for bundle in stats:
                history = seen.setdefault(bundle, [])
                if history and history[-1][0] != broker and bundle not in leader.reports.get(broker, {}):
                    moves.append((bundle, w["mtime"], history[-1][0], broker, len(history)))
        leader.reports = reports
        started = leader.sample()
        if last.get(broker) is not w:
            for bundle, s in stats.items():
                seen[bundle].append((broker, float(s["msgRateIn"]) + float(s["msgRateOut"]), bundle in started))
        last[broker] = w
    states.update({t: {b: dict(v) for b, v in leader.averages.items()} for t in pending})
    firsts = []
    for bundle, t, source, destination, k in moves:
        history = seen[bundle]
        before = [r for b, r, _ in history[:k] if b == source][-5:]
        after = [(r, started) for b, r, started in history[k:] if b == destination]
        if before and after:
            firsts.append(FirstSample(bundle, t, source, destination, statistics.median(before), after[0][0],
                                      after[1][0] if len(after) > 1 else None, after[0][1]))
    return checks, firsts, states


@dataclass(frozen=True)
class SplitCheck:
    """The leader's split check after one report write (``updateAll`` → ``checkNamespaceBundleSplit``): the bundles
    ``BundleSplitterTask`` finds hot on the rebuilt averages, each with its long-term rate (in + out, msg/s)."""
    mtime: int  # the report write that ran it
    broker: str  # whose report it was
    hot: tuple[tuple[str, tuple[str, ...], float], ...]  # (bundle, thresholds passed, long-term msg/s)


def split_checks(writes: list[dict], config: PulsarConfig, busy=()) -> list[SplitCheck]:
    """Every split check the leader ran, on its own inputs: each ``updateAll`` (``_tasks``) samples every listed
    bundle and runs ``BundleSplitterTask.findBundlesToSplit`` over every report as it then stood, with the long-term
    averages the leader keeps (``modular_split_candidates``). A namespace's bundle count is that of the bundles the
    reports list (the leader reads the namespace's bundles; the two differ only by bundles no broker owns, and only
    near ``loadBalancerNamespaceMaximumBundles``)."""
    leader, out = _Leader(), []
    for kind, w, reports in _tasks(writes, busy):
        if kind == "stored":
            leader.stored[w["path"][len(BUNDLE_DATA):]] = w["data"]
            continue
        leader.reports = reports
        leader.sample()
        data = {b: {"longTermData": {STATS[f]: v for f, v in zip(ta.FIELDS, windows["long"][1])}}
                for b, windows in leader.averages.items()}
        counts: dict[str, int] = {}
        for bundle in {b for stats in leader.reports.values() for b in stats}:
            namespace = split_bundle_name(bundle)[0]
            counts[namespace] = counts.get(namespace, 0) + 1
        found = modular_split_candidates({b: {"lastStats": s} for b, s in leader.reports.items()}, data, counts, config)
        out.append(SplitCheck(w["mtime"], w["path"][len(BROKERS):], tuple(
            (d.bundle, tuple(t.reason for t in d.triggered),
             _rate(leader.averages[d.bundle]["long"][1]) if d.bundle in leader.averages else 0.0)
            for d in found if d.selected)))
    return out
