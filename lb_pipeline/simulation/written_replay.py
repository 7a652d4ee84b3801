"""The modular leader's bundle averages replayed from every load report the brokers wrote, without Spark: what
``transforms.written_averages`` runs per cluster and bucket, and ``simulation.landing`` on a landing folder.

The rows, of one cluster, by ``kind``: ``write`` (each write: ``broker``, ``zxid``, ``write_ms``, ``version``,
``deleted``, with its snapshot's keys), ``stats`` (a bundle of a write: ``zxid``, ``bundle``, ``position`` and the
rates), ``stored`` (the leader's stored ``BundleData`` of a snapshot: ``bundle`` and the copy's columns), ``batch``
(a snapshot's ``written_ms``: when the leader stored them), ``listed`` (the bundles a snapshot's reports list) and
``event`` (the leader's split lines: ``event``, ``event_ts``). The writes in the store's order; the leader's stored
copies enter at the time the snapshot says it wrote them (each batch once, with the leader's own sample before it),
those of the first snapshot with writes also before every write; at each snapshot with writes, the averages as they
stood after its last write.
"""

from __future__ import annotations

import pandas as pd

from lb_pipeline.algorithms import time_average as ta
from lb_pipeline.simulation import bundle_samples
from lb_pipeline.simulation import leader_samples as ls
from lb_pipeline.simulation.leader_samples import STATS as _JSON  # time_average.FIELDS → their JSON names


def replay(pdf: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Rows of ``columns`` (``transforms.written_averages.SCHEMA``'s names) from one cluster's rows of every kind
    (module docstring): for each snapshot with writes, each bundle its reports list, the averages after its last
    write."""
    writes = pdf[pdf["kind"] == "write"]
    listed = pdf[pdf["kind"] == "listed"]
    if writes.empty or listed.empty:
        return pd.DataFrame(columns=columns)
    per_snapshot = writes.groupby("snapshot_ts")["write_ms"].max()
    first, start = per_snapshot.index.min(), int(writes["write_ms"].min()) - 1
    timeline = _report_events(writes, pdf[pdf["kind"] == "stats"])
    stored, seen = [], set()
    copies_of = dict(tuple(pdf[pdf["kind"] == "stored"].groupby("snapshot_ts")))
    for r in pdf[pdf["kind"] == "batch"].sort_values(["snapshot_ts"]).itertuples(index=False):
        at = start if r.snapshot_ts == first else int(r.written_ms)
        if at in seen:  # a batch two snapshots both hold enters once
            continue
        seen.add(at)
        stored.append({"zxid": -1, "mtime": at, "path": ls.BUNDLE_DATA, "data": None})  # the leader's own sample
        copies = copies_of.get(r.snapshot_ts, pdf.iloc[:0])
        stored += [{"zxid": -1, "mtime": at, "path": ls.BUNDLE_DATA + c.bundle, "data": _copy(c)}
                   for c in copies.itertuples(index=False)]
    logged = pdf[pdf["kind"] == "event"] if "event" in pdf.columns else pdf.iloc[:0]
    busy = ls.busy_from_log([{"kind": r.event, "event_ts": r.event_ts} for r in logged.itertuples(index=False)])
    at = {int(ms) + 1: ts for ts, ms in per_snapshot.items()}
    states = bundle_samples.replay(sorted(stored + timeline, key=lambda e: (e["mtime"], e["zxid"])), at=sorted(at),
                                   busy=busy)
    counts = writes.groupby("snapshot_ts")["zxid"].nunique()
    days = dict(zip(writes["snapshot_ts"], writes["snapshot_date"]))
    rows = []
    for when, ts in at.items():
        state = states[when]
        for bundle in listed.loc[listed["snapshot_ts"] == ts, "bundle"]:
            if bundle not in state:
                continue
            row = {"cluster": pdf["cluster"].iloc[0], "snapshot_ts": ts, "snapshot_date": days[ts], "bundle": bundle,
                   "writes_replayed": int(counts[ts])}
            for w in ("short", "long"):
                n, values = state[bundle][w]
                row[f"{w}_num_samples"] = int(n)
                row.update({f"{w}_{f}": float(x) for f, x in zip(ta.FIELDS, values)})
            rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def _report_events(writes: pd.DataFrame, stats: pd.DataFrame) -> list[dict]:
    """The writes as ``leader_samples`` reads a probe's, one per zxid, with this bucket's bundles in each
    ``lastStats`` in the write's order."""
    listed: dict[int, dict] = {}
    for r in stats.sort_values(["zxid", "position"]).itertuples(index=False):
        listed.setdefault(int(r.zxid), {})[r.bundle] = {_JSON[f]: getattr(r, f) for f in ta.FIELDS}
    out = []
    for r in writes.drop_duplicates("zxid").itertuples(index=False):
        write = {"zxid": int(r.zxid), "mtime": int(r.write_ms), "path": ls.BROKERS + r.broker,
                 "version": None if pd.isna(r.version) else int(r.version)}
        write["data"] = None if r.deleted else {"lastStats": listed.get(int(r.zxid), {})}
        out.append(write)
    return out


def _copy(r) -> dict:
    return {f"{w}TermData": {"numSamples": int(getattr(r, f"{w}_num_samples")),
                             **{_JSON[f]: float(getattr(r, f"{w}_{f}")) for f in ta.FIELDS}} for w in ("short", "long")}
