"""``lb/report-writes.jsonl``: every write of the brokers' load reports since the snapshot before, to rows of
``bronze/report_writes``.

The modular leader samples every bundle each time any broker rewrites its report (``handleDataNotification`` →
``updateAll`` → ``updateBundleData``), from the ``lastStats`` of every report as last written. A snapshot a minute
keeps one of the 5 to 12 reports each broker writes a minute; ``collect --every … --metadata-store …`` keeps them
all (``snapshots.report_watch``), one JSON object a line, in the metadata store's order:

* ``{"zxid": …, "mtime": …, "broker": "host:port", "version": …, "lastStats": {bundle: stats, …}, "usage": …}``: a
  write (``zxid`` the store's transaction id, ``mtime`` its clock in ms, ``version`` the node's; ``usage``, each
  resource's usage and limit as written, is kept for analysis and not read here);
* ``{"zxid": …, "mtime": …, "broker": …, "deleted": true}``: the report deleted (the broker stopped).

A row per bundle of a write (``position``: its place in the write's ``lastStats``, the broker's map order), and one
row with a null bundle for a write that lists none or a deletion, so that every write is a row. A line that is not
such an object is quarantined by its line number and field; the others land.
"""

from __future__ import annotations

from lb_pipeline.formats import values as v
from lb_pipeline.formats.values import Problem, Row, RowProblem
from lb_pipeline.model.names import broker_problem

# A snapshot's report writes are those the collector kept until it finished the snapshot: a write from later would
# become the snapshot's time and take in the next snapshots' writes (``transforms.written_averages``). The margin
# covers a long collection and the store's clock running a little ahead of the collector's (the row rule
# ``written_by_snapshot`` of ``expectations/bronze.report_writes.json``).
WRITES_AFTER_SNAPSHOT_MS = 300_000


def written_by_snapshot(write_ms: int | None, snapshot_ms: int) -> bool | None:
    """Whether a write's store time is one its snapshot (taken at ``snapshot_ms``, to the second) can hold."""
    return None if write_ms is None else write_ms <= snapshot_ms // 1000 * 1000 + WRITES_AFTER_SNAPSHOT_MS + 999


STATS = (("msg_rate_in", "msgRateIn"), ("msg_rate_out", "msgRateOut"), ("msg_throughput_in", "msgThroughputIn"),
         ("msg_throughput_out", "msgThroughputOut"))


def parse_report_writes(lines: list[str]) -> tuple[list[Row], list[Problem]]:
    """Rows of ``bronze/report_writes``; a bad line is a problem named by its number and field. A transaction is
    one write: a ``zxid`` on more than one line refuses each of them (the store never writes one twice, and which
    copy is the write cannot be told; a copy that listed no bundle beside one that listed some had escaped the
    (transaction, position) rule, and the write was replayed twice)."""
    problems, parsed = [], []  # problems as (line, Problem), to be given in line order
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            parsed.append((number, _write(line, number)))
        except v.FileProblem as exc:
            problems.append((number, Problem(f"line {number}", exc.problem.reason)))
        except RowProblem as exc:
            problems.append((number, Problem(f"line {number}: {exc.problem.field}", exc.problem.reason)))
    on: dict[int, list[int]] = {}
    for number, got in parsed:
        on.setdefault(got[0]["zxid"], []).append(number)
    rows = []
    for number, got in parsed:
        if len(lines_of := on[got[0]["zxid"]]) > 1:
            problems.append((number, Problem(f"line {number}: zxid", f"transaction {got[0]['zxid']} is on lines "
                                             f"{', '.join(map(str, lines_of))}: a write is one transaction, and "
                                             "which is it cannot be told")))
        else:
            rows += got
    return rows, [p for _, p in sorted(problems, key=lambda x: x[0])]


def _write(line: str, number: int) -> list[Row]:
    doc = v._obj(v.load_json(line.encode("utf-8")), "(line)", row_level=True)
    broker = v.text(doc, "broker", "broker")
    if problem := broker_problem(broker):
        raise RowProblem("broker", problem)
    deleted = v.boolean(doc, "deleted", "deleted", default=False)
    common = {"broker": broker, "line": number, "zxid": v.integer(doc, "zxid", "zxid"),
              "write_ms": v.integer(doc, "mtime", "mtime"), "deleted": deleted,
              "version": None if deleted else v.integer(doc, "version", "version", required=False, bits=32)}
    stats = {} if deleted else v._obj(doc.get("lastStats", {}), "lastStats", row_level=True)
    out = []
    for position, (name, s) in enumerate(stats.items()):
        field = f"lastStats[{name}]"
        s = v._obj(s, field, row_level=True)
        namespace, rng = v._bundle_full_name(name, field)
        out.append({**common, "bundle": name, "namespace": namespace, "bundle_range": rng, "position": position,
                    **{c: v.num(s, k, f"{field}.{k}") for c, k in STATS}})
    return out or [{**common, "bundle": None, "namespace": None, "bundle_range": None, "position": None,
                    **{c: None for c, _ in STATS}}]
