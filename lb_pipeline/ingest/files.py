"""One landing file → its rows and quarantine rows, in plain Python: what the Spark workers run for every file
(``bronze.parse_family``) and ``validate-snapshot`` runs without Spark (``snapshot_check``)."""

from __future__ import annotations

from operator import itemgetter

from lb_pipeline.formats import values as p
from lb_pipeline.ingest.landing import DayListing, shown, tables_of
from lb_pipeline.ingest.tables import TABLES, BronzeTable, locate

# tables whose brokers need not be running: the manifest lists the live ones, a failure domain the configured ones,
# and a broker stopped since the snapshot before left its last log lines and report writes
_CONFIGURED = ("snapshots", "failure_domains", "lb_events", "report_writes")
MAX_RAW_BYTES = 1 << 20  # quarantined text kept in the table; the file itself stays in the landing folder


def parse_file(table: BronzeTable, path: str, content: bytes, manifests: dict[str, list[str] | None] | None = None,
               max_depth: int | None = None, memo: dict | None = None,
               root: str | None = None) -> tuple[list[dict], list[dict]]:
    """Parse one file into (good rows, quarantine rows); never raises for bad input.

    ``manifests`` maps each complete snapshot directory of the day to the brokers its manifest lists; a file of
    another directory (no manifest: incomplete or still being written) is quarantined whole, and rows about a
    broker the manifest does not list are quarantined row by row. ``memo`` (one dict per file) keeps the parsed
    JSON for the next table the same file feeds. ``root``: the landing folder the path was listed under.
    """
    where = locate(path, root)
    if where is None:
        return [], [quarantine_row(table, path, None, None, "(path)", "expected <cluster>/<YYYY-MM-DDTHH-MM-SSZ>/… in the path", content)]
    cluster, ts, rel = where
    common = {"cluster": cluster, "snapshot_ts": ts, "snapshot_date": ts.strftime("%Y-%m-%d"), "source_file": path}
    snapshot_dir = path[: -len(rel) - 1]
    if manifests is not None and table.name != "snapshots" and manifests.get(snapshot_dir) is None:
        reason = ("the snapshot's manifest.json is itself quarantined" if snapshot_dir in manifests else
                  "the snapshot directory has no manifest.json (incomplete or still being written)")
        return [], [quarantine_row(table, path, cluster, ts, "manifest.json", reason, content)]
    try:
        doc = _lines(content) if table.text else _load(content, max_depth, {} if memo is None else memo)
        rows, problems = p.parsed_whole(table.parse, doc, rel)
        if table.name == "snapshots" and rows:
            declared, second = rows[0]["snapshot_timestamp_ms"], int(ts.timestamp() * 1000)
            named = rows[0].pop("manifest_cluster")
            if declared // 1000 * 1000 != second:  # the directory names the snapshot's second (ms dropped)
                rows, problems = [], [p.Problem("snapshotTimestampMs", f"expected a time within the directory's second "
                                                f"{second}..{second + 999}, got {declared}", whole_file=True)]
            elif named is not None and named != cluster:
                rows, problems = [], [p.Problem("cluster", f"expected the cluster of its folder, {cluster!r}, got {named!r}",
                                                whole_file=True)]
    except p.FileProblem as exc:
        rows, problems = [], [exc.problem]
    except Exception as exc:  # noqa: BLE001 (a parser bug hostile input found: the file waits, the night goes on)
        rows, problems = [], [p.Problem("(file)", f"expected a file the parser can read, but it failed with "
                                        f"{type(exc).__name__}: {str(exc)[:200]} (please report)", whole_file=True)]
    if manifests is not None and table.name not in _CONFIGURED and rows and (broker_of := _broker_key(rows[0])):
        listed = set(manifests[snapshot_dir])
        unknown = [r for r in rows if broker_of(r) not in listed]
        if unknown:
            rows = [r for r in rows if broker_of(r) in listed]
            problems = problems + [p.Problem("broker", f"expected a broker listed in manifest.json, got {broker_of(unknown[0])!r} "
                                            f"({len(unknown)} row(s))", whole_file=not rows)]
    if rows and p.may_hold_lone_surrogates(content):
        rows, problems = p.encodable_rows(rows, problems)
    good = [{**common, **r} for r in rows]
    bad = [quarantine_row(table, path, cluster, ts, pr.field, pr.reason, content if pr.whole_file or len(content) <= 4096 else None)
           for pr in problems]
    return good, bad


def _broker_key(row: dict):
    """How to read the broker a file's rows are about (its ``broker`` column, or whose runtime configuration it
    is), or None for rows about no broker."""
    if "broker" in row:
        return itemgetter("broker")
    if str(row.get("source")).startswith("runtime:"):
        return lambda r: r["source"][len("runtime:"):]
    return None


def _lines(content: bytes) -> list[str]:
    """A text file's lines (a log: invalid UTF-8 replaced, not refused; Pulsar's messages are what matter)."""
    return content.decode("utf-8", errors="replace").splitlines()


def _load(content: bytes, max_depth: int | None, memo: dict):
    if "doc" not in memo:
        try:
            memo["doc"] = p.load_json(content, max_depth)
        except p.FileProblem as exc:
            memo["doc"] = exc
    if isinstance(memo["doc"], p.FileProblem):
        raise memo["doc"]
    return memo["doc"]


def table_of(path: str, root: str | None = None) -> BronzeTable:
    """The bronze table whose globs match a file (for quarantine records of files Spark never read)."""
    rel = (locate(path, root) or (None, None, path))[2]
    return TABLES[(tables_of(rel, {t.name: t.globs for t in TABLES.values()}) or ["snapshots"])[0]]


def refused_row(table: BronzeTable, path: str, field: str, reason: str, content: bytes | None = None,
                root: str | None = None) -> dict:
    """A quarantine row for a file its path places (refused by the listing, or changed before it was read); a
    cluster folder itself (a link, or one that cannot be listed) has its cluster and no snapshot time."""
    return quarantine_row(table, path, *(locate(path, root) or (_cluster_folder(path, root), None))[:2], field,
                          reason, content)


def _cluster_folder(path: str, root: str | None) -> str | None:
    """``<root>/<cluster>`` → the cluster; None for any other path."""
    prefix = None if root is None else root.rstrip("/") + "/"
    rest = path[len(prefix):] if prefix and path.startswith(prefix) else ""
    return rest if rest and "/" not in rest else None


def listing_quarantine(listing: DayListing) -> list[dict]:
    """Quarantine rows for what the listing found unreadable: by name only, nothing of these is read. An empty log
    or report-writes file (a text file of lines) holds no lines: nothing to land, nothing wrong."""
    root = listing.root
    shown_root = root and shown(root)  # the refused paths are kept as they can be shown
    return [*(quarantine_row(TABLES["snapshots"], d, *(locate(d + "/x", root) or (None, None))[:2], "(directory)",
                          "expected a snapshot directory with manifest.json, got an empty directory", None)
              for d in listing.empty_dirs),
            *(refused_row(table, f, "(file)", "expected a JSON document, got an empty file", b"", root)
              for f in listing.empty_files if not (table := table_of(f, root)).text),
            *(refused_row(table_of(f, shown_root), f, fld, why, root=shown_root) for f, fld, why in listing.refused)]


def quarantine_row(table, path, cluster, ts, field, reason, content) -> dict:
    raw = None
    truncated = False
    if content is not None:
        truncated = len(content) > MAX_RAW_BYTES
        raw = content[:MAX_RAW_BYTES].decode("utf-8", errors="replace")
    return {"cluster": cluster, "snapshot_ts": ts, "snapshot_date": ts.strftime("%Y-%m-%d") if ts else None,
            "source_file": path, "bronze_table": table.name, "field": p.printable(field) if field else field,
            "reason": p.printable(reason), "raw": raw,
            "raw_truncated": truncated}
