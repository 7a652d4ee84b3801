"""Every write of the brokers' load reports, kept between snapshots (``collect --every … --metadata-store …``).

The modular leader samples every bundle at each write of any broker's report (``/loadbalance/brokers/<broker>``),
5 to 12 a minute a broker; a snapshot keeps the last. A :class:`ReportWatcher` reads the reports' nodes
``every`` seconds (a quarter by default: a broker writes at most every 5 s, so none is missed; a stat a broker a
pass, its data only when it changed) and keeps each new version, cut to what the leader reads of it (``lastStats``;
``usage``: the usage and limit of each resource, what the overload check of its placement and the resource-based
shedders read), with the store's transaction id, time and version;
a report that disappeared (its broker stopped) is kept as a deletion. ``take`` hands over what was kept since the
last call, in the store's order, as the lines of a snapshot's ``lb/report-writes.jsonl``
(``formats.report_writes``). Memory is bounded: past ``max_writes`` kept writes the oldest are dropped and
``take`` says how many (the snapshot's manifest then names the gap).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque

from lb_pipeline.snapshots.metadata_store import StoreError, parse_node

BROKERS = "/loadbalance/brokers"
RESOURCES = ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut")  # LocalBrokerData's ResourceUsage fields


class ReportWatcher:
    def __init__(self, store, every: float = 0.25, max_writes: int = 200_000):
        self.store, self.every = store, every
        self._kept: deque[dict] = deque()
        self._max, self._dropped, self._errors = max_writes, 0, []
        self._seen: dict[str, int] = {}  # broker → the mzxid of the write last kept
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._thread = threading.Thread(target=self._run, name="report-watch", daemon=True)

    def start(self) -> ReportWatcher:
        self.poll()  # what the reports hold now: a continuing bundle's starting point
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5 * self.every + 5)

    def take(self) -> tuple[list[dict], int, list[str]]:
        """(the writes kept since the last call, in the store's order; how many were dropped for memory; the store
        errors met meanwhile)."""
        with self._lock:
            kept, dropped, errors = list(self._kept), self._dropped, self._errors
            self._kept.clear()
            self._dropped, self._errors = 0, []
        return sorted(kept, key=lambda w: w["zxid"]), dropped, errors

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.poll()
            except StoreError as exc:  # a lost session: said in the next snapshot, the watch goes on
                with self._lock:
                    self._errors = (self._errors + [str(exc)])[-10:]

    def poll(self) -> int:
        """One pass over the reports; returns how many new writes it kept."""
        listed = self.store.children(BROKERS)
        found = []
        for broker in listed:
            path = f"{BROKERS}/{broker}"
            stat = self.store.get_versioned(path, data=False)  # the bookkeeping alone: most passes find no change
            if stat is None or self._seen.get(broker) == stat.mzxid:
                continue
            node = self.store.get_versioned(path)
            if node is None:
                continue
            self._seen[broker] = node.mzxid
            try:  # a JSON object of finite numbers, as every node the collector reads (a number past a double's
                doc = parse_node(path, node)  # range would stop the snapshot's file from being written)
                stats = doc.get("lastStats") or {}
            except StoreError:
                doc, stats = None, None  # kept as the store holds it: ingest quarantines it by line
            write = {"zxid": node.mzxid, "mtime": node.mtime, "broker": broker, "version": node.version}
            write["lastStats"] = stats if isinstance(stats, dict) else node.data.decode("utf-8", "replace")
            if isinstance(stats, dict) and (usage := resource_usage(doc)):
                write["usage"] = usage
            found.append(write)
        gone = [b for b in self._seen if b not in listed]
        if gone:
            parent = self.store.get_versioned(BROKERS)
            for broker in gone:
                del self._seen[broker]
                found.append({"zxid": parent.pzxid if parent else 0,  # the reader's clock: a deletion has no mtime
                              "mtime": parent.now_ms if parent else int(time.time() * 1000),
                              "broker": broker, "deleted": True})
        with self._lock:
            self._kept.extend(found)
            while len(self._kept) > self._max:
                self._kept.popleft()
                self._dropped += 1
        return len(found)


def resource_usage(doc: dict) -> dict:
    """Each resource's ``usage`` and ``limit`` as a report holds them (what is not a finite number is left out); also
    what ``simulation.placement_replay`` reads back of a kept write."""
    out = {}
    for name in RESOURCES:
        r = doc.get(name)
        if isinstance(r, dict):
            pair = {k: r[k] for k in ("usage", "limit") if _finite(r.get(k))}
            if pair:
                out[name] = pair
    return out


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def lines(writes: list[dict]) -> str:
    return "".join(json.dumps(w, separators=(",", ":"), allow_nan=False) + "\n" for w in writes)
