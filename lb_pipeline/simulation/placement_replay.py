"""The leader's shed destinations replayed where it chose them: each logged unload's destination against the
placement path (``selection.ModularPlacement.select``) run on the leader's view at that instant.

The view: the snapshot before the unload (its reports, the leader's stored ``BundleData``, policies, domains), each
broker's ``lastStats`` replaced by its last report write before the instant (``lb/report-writes.jsonl``), and the
assignments made since the cycle began. ``doLoadShedding`` picks every destination from the same ``LoadData`` and
does not preallocate them (the unload carries the broker as an affinity, which the bundle's first lookup consumes);
but a second lookup of a bundle with several topics that reaches the leader before the first has taken the bundle
goes through ``selectBrokerForAssignment``, which preallocates it: the broker it picks counts the bundle from then
on (``removeMostServicingBrokersForNamespace``, the strategy's preallocated load), and the cycle's later unloads
can go elsewhere. The leader logs every ``selectBroker`` (``N brokers being considered for assignment of B``: kind
``assignment`` in ``bronze/lb_events``); one logged just before the unload of the same bundle is the cycle's own
choice, the others are lookups, replayed in time order between the unloads. Each resource's usage is the write's
where the collector kept it (``usage``), else the snapshot's; assignments are dropped when the next cycle starts
(Pulsar drops each when the broker's report lists the bundle).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd

from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.selection import LookupFailed
from lb_pipeline.errors import LbError
from lb_pipeline.formats.values import FileProblem, load_json
from lb_pipeline.algorithms.shedding.driver import MODULAR_STRATEGIES
from lb_pipeline.model.load_manager import configured_strategy
from lb_pipeline.simulation.balancers import ModularShedding
from lb_pipeline.simulation.landing_files import refused
from lb_pipeline.simulation.logged_truth import ts_ms
from lb_pipeline.snapshots import layout
from lb_pipeline.snapshots.load import load_snapshot
from lb_pipeline.snapshots.report_watch import resource_usage

OWN_CHOICE_MS = 100  # a cycle's own selectBroker line comes within a few ms before its unload line
NEW_CYCLE_MS = 20_000  # unloads further apart than this belong to different shedding cycles
RATES = (("msgRateIn", "msg_rate_in"), ("msgRateOut", "msg_rate_out"), ("msgThroughputIn", "msg_throughput_in"),
         ("msgThroughputOut", "msg_throughput_out"))


def timeline(events: list[dict]) -> list[tuple[int, str, str, str | None]]:
    """(ms, "unload" | "lookup", bundle, logged destination) in time order: the logged unloads and the lookups'
    assignments (an ``assignment`` not followed within ``OWN_CHOICE_MS`` by the unload of its bundle)."""
    unloads = [(ts_ms(e["event_ts"]), e["bundle"], e["to_broker"]) for e in events if e["kind"] == "unload"]
    unloaded: dict[str, list[int]] = {}
    for t, b, _ in unloads:
        unloaded.setdefault(b, []).append(t)
    out = [(t, "unload", b, d) for t, b, d in unloads]
    for e in events:
        if e["kind"] == "assignment":
            t, b = ts_ms(e["event_ts"]), e["bundle"]
            if not any(0 <= u - t <= OWN_CHOICE_MS for u in unloaded.get(b, ())):
                out.append((t, "lookup", b, None))
    return sorted(out, key=lambda x: (x[0], x[1] == "unload"))


def _usages(dirs: list[Path], root: Path) -> dict[tuple[str, int], dict]:
    """(broker, zxid) → the write's ``usage`` where the collector kept it (``report_watch.resource_usage``: finite
    numbers only). A line ``load_json`` refuses is left out; a file outside the landing is not read."""
    out = {}
    for d in dirs:
        path = d / layout.REPORT_WRITES
        if not path.exists() or refused(path, root):
            continue
        for line in path.read_bytes().splitlines():
            try:
                doc = load_json(line)
            except FileProblem:
                continue
            if (isinstance(doc, dict) and isinstance(doc.get("usage"), dict) and isinstance(doc.get("broker"), str)
                    and type(doc.get("zxid")) is int):
                out[(doc["broker"], doc["zxid"])] = resource_usage(doc["usage"])
    return out


def _written(rows: list[dict], usages: dict) -> dict[str, list[tuple[int, dict, dict]]]:
    """broker → its writes (ms, lastStats, usage) in the store's order."""
    by: dict[tuple[str, int], tuple[int, dict, dict]] = {}
    for r in sorted(rows, key=lambda r: (r["zxid"], r["position"] if r["position"] is not None else -1)):
        if r["deleted"]:
            continue
        key = (r["broker"], r["zxid"])
        _, stats, _ = by.setdefault(key, (int(r["write_ms"]), {}, usages.get(key, {})))
        if r["bundle"] is not None:
            stats[r["bundle"]] = {k: float(r[c]) for k, c in RATES}
    out: dict[str, list[tuple[int, dict, dict]]] = {}
    for (broker, _), write in sorted(by.items(), key=lambda kv: kv[1][0]):
        out.setdefault(broker, []).append(write)
    return out


def _bundle_data(averages: pd.DataFrame | None) -> dict[int, dict[str, dict]]:
    """snapshot ms → bundle → ``BundleData`` of the leader's averages replayed from every write (``read_leader``'s
    rows with ``replayed``), which are newer than the copies the leader stores once a minute."""
    if averages is None or averages.empty or "replayed" not in averages:
        return {}
    out: dict[int, dict[str, dict]] = {}
    for r in averages[averages["replayed"].fillna(False).astype(bool)].to_dict("records"):
        data = {f"{w}TermData": {"numSamples": int(r[f"{w}_num_samples"]),
                                 **{k: float(r[f"{w}_{c}"]) for k, c in RATES}} for w in ("short", "long")}
        out.setdefault(ts_ms(r["snapshot_ts"]), {})[r["bundle"]] = {**data, "topics": 0}
    return out


def _view(snap, writes: dict[str, list[tuple[int, dict, dict]]], t: int, data: dict[str, dict] | None = None
          ) -> LoadData:
    """The snapshot's reports, each with its broker's last write before ``t``; the leader's averages ``data`` where
    replayed, else its stored copies."""
    reports = copy.deepcopy(snap.reports)
    for broker, report in reports.items():
        last = [w for w in writes.get(broker, ()) if w[0] <= t]
        if last:
            _, stats, usage = last[-1]
            report["lastStats"], report["bundles"] = stats, list(stats)
            for k, _ in RATES:
                report[k] = sum(s[k] for s in stats.values())
            for resource, values in usage.items():
                report[resource] = {**(report.get(resource) or {}), **values}
    return LoadData.from_reports(reports, {**snap.bundle_data, **(data or {})})[0]


def replay_placements(dirs: list[Path], root: Path, events: list[dict] | None, rows: list[dict],
                      averages: pd.DataFrame | None = None) -> dict | None:
    """How many of the logged unloads' destinations the placement path picks at their instant, with the lookups'
    assignments between them and without; None where there is nothing to replay (no logged unload of a modular
    strategy, or no report writes). ``rows``: the snapshots' report writes (``landing_writes.read_writes``)."""
    line = timeline(events or [])
    writes = _written(rows, _usages(dirs, root)) if rows else {}
    if not any(kind == "unload" for _, kind, _, _ in line) or not writes:
        return None
    replayed = _bundle_data(averages)
    loaded: dict[Path, object] = {}  # each snapshot read once, when first needed

    def snapshot_before(t: int):
        for d in reversed(dirs):
            snap = loaded.get(d)
            if snap is None:
                try:
                    snap = loaded[d] = load_snapshot(d, with_topics=False)
                except LbError:
                    loaded[d] = snap = False
            if snap and snap.timestamp_ms <= t:
                return snap
        return None

    out = {}
    for with_lookups in (True, False):
        same = unloads = lookups = 0
        placement, last = None, None
        for t, kind, bundle, dest in line:
            if kind == "lookup" and not with_lookups:
                continue
            snap = snapshot_before(t)
            if snap is None:
                continue
            strategy = configured_strategy(snap.config)
            if strategy not in MODULAR_STRATEGIES:
                continue
            if placement is None or (kind == "unload" and (last is None or t - last > NEW_CYCLE_MS)):
                placement = ModularShedding.named(strategy, snap.config, 0).placement
            load, state = _view(snap, writes, t, replayed.get(snap.timestamp_ms // 1000 * 1000)), snap.cluster_state()
            if kind == "lookup":
                placement.assign(bundle, load, snap.config, state)
                lookups += 1
                continue
            last = t
            unloads += 1
            try:
                same += placement.select(bundle, load, snap.config, state) == dest
            except LookupFailed:  # a broker without load data picked: no destination, not the logged one
                pass
        out["with" if with_lookups else "without"] = (same, unloads, lookups)
    (same, unloads, lookups), (alone, _, _) = out["with"], out["without"]
    return {"placements_logged": unloads, "placements_same": same, "placements_same_without_lookups": alone,
            "lookup_assignments": lookups}
