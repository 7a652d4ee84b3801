"""The leader's averages replayed from every load report the brokers wrote, straight from a landing folder (each
snapshot's ``lb/report-writes.jsonl``, ``collect --every … --metadata-store …``), as the nightly job has them in
``silver/bundle_time_averages`` (``seeded_from`` = ``report-writes``): the simulation's what-if and validation paths
start each snapshot from the leader's own averages where the writes were kept.

Each line goes through ingest's parser (``formats.report_writes``), and a write made after its snapshot was taken
or a transaction repeated within a snapshot is refused as ingest's row rules refuse it (``written_by_snapshot``,
one row per transaction and position): left out and named in the notes, as ingest quarantines it.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from pathlib import Path

import pandas as pd

from lb_pipeline.formats.report_writes import parse_report_writes, written_by_snapshot
from lb_pipeline.simulation.arrivals import COLUMNS as ARRIVAL_COLUMNS, Arrival, first_listings
from lb_pipeline.simulation.landing_files import refused
from lb_pipeline.simulation.leader_averages import COLUMNS
from lb_pipeline.simulation.written_replay import replay
from lb_pipeline.snapshots import layout

WRITE = ["broker", "zxid", "write_ms", "version", "deleted"]
STATS = ["zxid", "bundle", "position", "msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out"]


def replayed_averages(dirs: list[Path], root: Path, cluster: str, stored: pd.DataFrame, written: dict[int, int],
                      bundles: pd.DataFrame, events: list[dict] | None, notes: list[str]) -> pd.DataFrame | None:
    """Rows of ``leader_averages.COLUMNS``: per snapshot with report writes, each bundle its reports list
    (``bundles``: ``read_history``'s bundle rows), the leader's averages after its last write; None without writes.
    ``stored``/``written``: the leader's stored ``BundleData`` rows and when each snapshot's were written
    (``landing.read_bundle_data``); ``events``: the brokers' logged events (its split lines held the leader)."""
    rows = []
    for d in dirs:
        rows += _writes(d, root, cluster, notes)
    if not rows:
        return None
    kept = _row_rules(rows, notes)
    if not kept:
        return None
    writes = pd.DataFrame(kept)
    frames = [writes[["cluster", "snapshot_ts", "snapshot_date", *WRITE]].drop_duplicates().assign(kind="write"),
              writes[writes["bundle"].notna()][["snapshot_ts", *STATS]].assign(kind="stats")]
    batches = pd.DataFrame([{"snapshot_ts": pd.Timestamp(t, unit="ms", tz="UTC"), "written_ms": w}
                            for t, w in written.items()], columns=["snapshot_ts", "written_ms"])
    if not stored.empty and not batches.empty:
        frames += [stored.merge(batches, on="snapshot_ts").assign(kind="stored"), batches.assign(kind="batch")]
    if not bundles.empty:
        frames.append(bundles[["snapshot_ts", "bundle"]].drop_duplicates().assign(kind="listed"))
    splits = [{"event": e["kind"], "event_ts": e["event_ts"]} for e in events or [] if e["kind"].startswith("split")]
    if splits:
        frames.append(pd.DataFrame(splits).assign(kind="event"))
    pdf = pd.concat(frames, ignore_index=True).assign(cluster=cluster)
    out = replay(pdf, ["cluster", "snapshot_ts", "snapshot_date", "bundle", "writes_replayed",
                       *[c for c in COLUMNS if c not in ("bundle", "snapshot_ts")]])
    return out[list(COLUMNS)] if not out.empty else None


def read_writes(dirs: list[Path], root: Path, cluster: str) -> list[dict]:
    """The rows of the snapshots' report writes that ``replayed_averages`` keeps (what it leaves out it names)."""
    return _row_rules([r for d in dirs for r in _writes(d, root, cluster, [])], [])


def read_arrivals(dirs: list[Path], root: Path, cluster: str) -> list[Arrival]:
    """Each bundle's arrivals on a new owner (``arrivals.first_listings``) in the snapshots' report writes."""
    return arrivals_of(read_writes(dirs, root, cluster))


def arrivals_of(rows: list[dict]) -> list[Arrival]:
    """``read_arrivals`` of rows ``read_writes`` already read."""
    return first_listings(pd.DataFrame(rows, columns=list(ARRIVAL_COLUMNS)))


def _row_rules(rows: list[dict], notes: list[str]) -> list[dict]:
    """The rows ingest's row rules keep of one cluster's writes; the others named in ``notes``."""
    keys = Counter((r["snapshot_ts"], r["zxid"], r["position"]) for r in rows if r["position"] is not None)
    kept = []
    for r in rows:
        where = f"{r['source_file']}: line {r['line']}"
        if not written_by_snapshot(r["write_ms"], int(r["snapshot_ts"].timestamp() * 1000)):
            notes.append(f"{where}: written_by_snapshot: written {r['write_ms']}, after its snapshot was taken; left out")
        elif r["position"] is not None and keys[(r["snapshot_ts"], r["zxid"], r["position"])] > 1:
            notes.append(f"{where}: zxid,position: the transaction {r['zxid']} repeated in its snapshot; left out")
        else:
            kept.append(r)
    return kept


def _writes(d: Path, root: Path, cluster: str, notes: list[str]) -> list[dict]:
    """The rows ingest lands of one snapshot's report writes (none without the file)."""
    path = d / layout.REPORT_WRITES
    if not path.exists():
        return []
    try:
        ts = pd.Timestamp(datetime.strptime(d.name, layout.TS_FORMAT), tz="UTC")
    except ValueError:
        return []  # read_history says so
    if why := refused(path, root):
        notes.append(f"{path}: {why}; left out")
        return []
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        notes.append(f"{path}: {exc}; left out")
        return []
    rows, problems = parse_report_writes(text.splitlines())
    notes += [f"{path}: {p.field}: {p.reason}; left out" for p in problems]
    common = {"cluster": cluster, "snapshot_ts": ts.to_pydatetime(), "snapshot_date": ts.strftime("%Y-%m-%d"),
              "source_file": str(path)}
    return [{**common, **r} for r in rows]
