"""What the leader did, read from a landing folder without Spark: the load manager's log lines
(``collect --broker-log``), or on a day ``generate --balance`` wrote, the unloads of the generator's own leader."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from lb_pipeline.formats.events import logged_by_snapshot, parse_lb_events
from lb_pipeline.simulation.landing_files import read_doc, refused
from lb_pipeline.snapshots import layout


def log_events(dirs: list[Path], notes: list[str] | None = None) -> tuple[list[dict], int]:
    """(the load-manager events the snapshots' logs hold, as ``bronze/lb_events`` rows; log lines read). A log that
    is a link, not a regular file or too large is left out, and a line its snapshot cannot hold
    (``events.logged_by_snapshot``), as ingest quarantines them; each is named in ``notes``."""
    notes = [] if notes is None else notes
    rows, lines = [], 0
    for d in dirs:
        root = d.parent.parent.resolve()  # the landing folder: <landing>/<cluster>/<snapshot>
        try:
            taken = int(datetime.strptime(d.name, layout.TS_FORMAT).replace(tzinfo=timezone.utc).timestamp() * 1000)
        except ValueError:
            continue  # read_history says so
        for log in sorted((d / layout.LOGS).glob("*.log")):
            if why := refused(log, root):
                notes.append(f"{log}: {why}; left out")
                continue
            text = log.read_bytes().decode("utf-8", errors="replace").splitlines()
            lines += len(text)
            for r in parse_lb_events(text, layout.broker_from_file_stem(log.stem))[0]:
                if logged_by_snapshot(int(r["event_ts"].timestamp() * 1000), taken):
                    rows.append(r)
                else:
                    notes.append(f"{log}: line {r['line']}: logged_by_snapshot: dated {r['event_ts']:%Y-%m-%dT%H:%M:%S}Z, "
                                 "which its snapshot cannot hold; left out")
    return rows, lines


_YEAR_10000_MS = 253_402_300_800_000


def generator_events(landing: str | Path, dirs: list[Path], notes: list[str]) -> list[dict] | None:
    """The unloads the generator's own leader made (``generate --balance``; the manifests' ``generator`` section),
    as ``bronze/lb_events`` rows: each dated a millisecond after the snapshot it decided on (its cycle ran on that
    snapshot's reports; the next snapshot shows the move). None where no snapshot says the generator balanced it.
    An entry that is not a well-formed unload is left out and named."""
    root, rows, balanced = Path(landing).resolve(), [], False
    for d in dirs:
        doc = read_doc(d / layout.MANIFEST, root, [])  # read_history names a manifest it could not read
        generator = doc.get("generator") if isinstance(doc, dict) else None
        if not isinstance(generator, dict):
            continue
        made = [e for e in generator.get("events") or [] if isinstance(e, dict) and e.get("type") == "unload"]
        balanced |= isinstance(generator.get("balance"), str) or bool(made)  # older days: their unloads say so
        for e in made:
            fields = (e.get("decided_at"), e.get("bundle"), e.get("broker"), e.get("destination"))
            try:
                if not (type(fields[0]) is int and 0 <= fields[0] < _YEAR_10000_MS
                        and all(isinstance(f, str) for f in fields[1:])):
                    raise ValueError
                when = pd.Timestamp(fields[0] + 1, unit="ms", tz="UTC")
            except (ValueError, OverflowError):
                notes.append(f"{d / layout.MANIFEST}: generator.events: expected an unload with decided_at (epoch "
                             "ms), bundle, broker and destination; left out")
                continue
            rows.append({"event_ts": when, "kind": "unload", "bundle": fields[1], "from_broker": fields[2],
                         "to_broker": fields[3]})
    return rows if balanced else None
