"""What ingest would quarantine from one snapshot directory, decided in plain Python (no Spark): the same
listing rules (``landing``), the same file parser (``files.parse_file``) and the same row rules
(``quality.row_rules``). ``validate-snapshot`` starts from it, so the checker accepts exactly what ingest accepts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from lb_pipeline.formats.values import max_file_bytes
from lb_pipeline.ingest import moved_topics
from lb_pipeline.ingest.files import listing_quarantine, parse_file, quarantine_row, refused_row
from lb_pipeline.ingest.landing import DayListing, list_snapshot
from lb_pipeline.ingest.reading import read_listed
from lb_pipeline.ingest.tables import TABLES
from lb_pipeline.quality import row_rules


@dataclass
class SnapshotCheck:
    quarantined: list[dict] = field(default_factory=list)  # bronze/quarantine rows, as ingest writes them
    unread: set[str] = field(default_factory=set)  # paths ingest refuses to open (links, devices, oversized, empty)
    # the paths it would read (listed, no link on the way) → their identity when listed (``landing.identity``)
    readable: dict[str, str] = field(default_factory=dict)
    manifest_usable: bool = False


def check_snapshot(directory: str, limit: int | None = None) -> SnapshotCheck:
    root, out = os.path.abspath(directory), SnapshotCheck()
    limit = max_file_bytes() if limit is None else limit
    listing = list_snapshot(DayListing(), root, {t.name: t.globs for t in TABLES.values()}, limit)
    out.quarantined += listing_quarantine(listing)
    out.unread = {u[len("file:"):] for u in [*listing.unread, *listing.empty_files]}
    out.readable = {u[len("file:"):]: listing.ids[u] for uris in listing.files.values() for u in uris}

    manifests: dict[str, list[str] | None] = {}
    for uri in listing.files.get("snapshots", []):
        good = _parse(out, "snapshots", [uri], None, limit, root=listing.root)
        manifests[uri[: -len("/manifest.json")]] = list(good[0]["brokers"] or []) if good else None
    out.manifest_usable = any(v is not None for v in manifests.values())
    # ownership first: a topic read from two brokers as its bundle moved keeps the owner's copy (moved_topics)
    kept = {}
    for name in sorted((n for n in TABLES if n != "snapshots"), key=lambda n: n != "ownership"):
        kept[name] = _parse(out, name, listing.files.get(name, []), manifests, limit, kept.get("ownership", []),
                            listing.root)
    return out


def _parse(out: SnapshotCheck, name: str, uris: list[str], manifests, limit: int, ownership=(),
           root: str | None = None) -> list[dict]:
    """The table's rows from these files that ingest would land; the rest go to ``out.quarantined``."""
    table, good = TABLES[name], []
    for uri in uris:
        try:
            content = read_listed(uri, limit, root=root, listed=out.readable.get(uri[len("file:"):]))  # as ingest
            rows, bad = parse_file(table, uri, content, manifests, root=root)
        except ValueError as exc:  # changed since the listing
            rows, bad = [], [refused_row(table, uri, "(file)", str(exc), root=root)]
        good += rows
        out.quarantined += bad
    if name == moved_topics.TABLE:
        extra = moved_topics.left_out(good, ownership)
        good = [r for i, r in enumerate(good) if i not in extra]
    kept, rejected = row_rules.check_rows(name, good)
    out.quarantined += [quarantine_row(table, r["source_file"], r["cluster"], r["snapshot_ts"], fld, why, None)
                        for r, fld, why in rejected]
    return kept
