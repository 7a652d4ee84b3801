"""``lb-pipeline validate-snapshot DIR``: report, per file and field, anything malformed or inconsistent.

Checks, in the order a replay depends on them:

1. every file is one ingest would read and land (``ingest.snapshot_check``: the same listing rules, parser and row
   rules, so the checker accepts exactly what ingest accepts), and every required file is present;
2. each topic of ``broker-stats topics`` hashes (CRC-32) into the bundle it is reported under;
3. topic sums equal the broker's ``lastStats`` for that bundle (when both are of one stats cycle: not for the
   leader's copies the collector read from the metadata store; within ``tolerance``, relative); the broker totals
   agree with ``lastStats`` as ``silver.broker_usage`` has them agree (Pulsar rewrites ``lastStats`` after summing
   them: below);
4. every bundle of every namespace is owned by exactly one live broker, and no broker reports or owns a bundle
   that is not in its namespace's layout.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from lb_pipeline.formats import brokers as fb
from lb_pipeline.formats import cluster as cp
from lb_pipeline.formats import topics as ft
from lb_pipeline.formats.values import FileProblem, encodable_rows, load_json, max_file_bytes, printable
from lb_pipeline.ingest.landing import shown
from lb_pipeline.ingest.reading import read_listed
from lb_pipeline.ingest.snapshot_check import SnapshotCheck, check_snapshot
from lb_pipeline.ingest.tables import locate
from lb_pipeline.model import bundles as bm
from lb_pipeline.model import topic_stats
from lb_pipeline.model.names import one_line
from lb_pipeline.snapshots import layout


@dataclass(frozen=True)
class Finding:
    file: str
    field: str
    message: str

    def __post_init__(self):  # text from the file: a lone surrogate escape must stay printable
        object.__setattr__(self, "field", printable(self.field))
        object.__setattr__(self, "message", printable(self.message))

    def __str__(self) -> str:  # one line, whatever the names in it hold
        return one_line(f"{self.file}: {self.field}: {self.message}")


def _read(root: Path, rel: str, findings: list[Finding], ingest: SnapshotCheck):
    """A file ingest would read, read as its workers do (never through a link); None for any other (a file refused
    by name, under a linked folder or empty is reported from the listing, never opened)."""
    path = str((root / rel).absolute())
    if path not in ingest.readable:
        if path not in ingest.unread and not os.path.isfile(path):
            findings.append(Finding(rel, "(file)", "missing"))
        return None
    try:
        return load_json(read_listed(path, max_file_bytes(), root=str(root.absolute().parent.parent),  # as listed
                                     listed=ingest.readable[path]))
    except FileProblem as exc:
        findings.append(Finding(rel, exc.problem.field, exc.problem.reason))
    except ValueError as exc:  # changed since the listing (read_listed's reasons)
        findings.append(Finding(rel, "(file)", str(exc)))
    return None


def _parse(parser, rel: str, findings: list[Finding], *args) -> tuple:
    """``parser(*args)``; a whole-file problem (say, a list where an object belongs) becomes a finding and nothing
    of the file is used, as ingest quarantines the file."""
    try:
        out = parser(*args)  # (rows, problems) pairs: one, or two for a broker's load report
    except FileProblem as exc:
        findings.append(Finding(rel, exc.problem.field, exc.problem.reason))
        return None
    return tuple(part for rows, problems in zip(out[::2], out[1::2]) for part in encodable_rows(rows, problems))


REFILL_TOLERANCE = 0.01  # silver.broker_usage's: a refill after the totals were summed moves lastStats a little


def _close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance * max(abs(a), abs(b), 1.0)


def validate_snapshot(directory: str | Path, tolerance: float = 1e-6) -> list[Finding]:
    root = Path(directory).absolute()
    findings = _findings(root, tolerance)
    return list(dict.fromkeys(findings))  # a parse problem is found by both passes


def _findings(root: Path, tolerance: float) -> list[Finding]:
    if locate(f"{root}/{layout.MANIFEST}") is None:
        return [Finding(".", "(directory)", f"expected a directory named <cluster>/{layout.TS_FORMAT}, as collect and "
                                            "generate write them: ingest reads nothing else, so nothing else is checked")]
    ingest = check_snapshot(str(root))
    prefix = shown(f"file:{root}")  # as ingest stores paths (bytes that are not UTF-8 escaped)
    findings = [Finding(q["source_file"][len(prefix):].lstrip("/") or ".", q["field"], q["reason"])
                for q in ingest.quarantined if q["field"] != "manifest.json"]
    if not ingest.manifest_usable:
        return findings + [Finding(layout.MANIFEST, "(snapshot)", "no usable manifest.json: ingest would quarantine "
                                                                  "every file of this snapshot")]
    read = lambda rel: _read(root, rel, findings, ingest)  # noqa: E731
    rows, _ = cp.parse_manifest(read(layout.MANIFEST))  # usable: check_snapshot parsed it
    brokers = rows[0]["brokers"]
    missing_parts = set(rows[0]["missing_parts"])
    if not rows[0]["complete"]:
        findings.append(Finding(layout.MANIFEST, "complete", f"snapshot is incomplete: missing {sorted(missing_parts)}"))
    leader_config = layout.runtime_config(rows[0]["leader"]) if rows[0]["leader"] else None
    if leader_config and leader_config not in missing_parts and not (root / leader_config).is_file():
        findings.append(Finding(leader_config, "(file)", "missing, and not in missingParts: the leader's effective "
                                "configuration, which this snapshot is replayed under (the nearest snapshot's stands in)"))

    layouts: dict[str, bm.NamespaceBundles] = {}
    for ns_file in layout.namespace_files(root):
        rel = str(ns_file.relative_to(root))
        namespace = rel[len("namespaces/"):-len(".json")]
        doc = read(rel)
        if doc is None:
            continue
        ns_rows, problems = _parse(cp.parse_namespace, rel, findings, doc, namespace) or ([], [])
        findings += [Finding(rel, pr.field, pr.reason) for pr in problems]
        if ns_rows:
            namespace = ns_rows[0]["namespace"]
            layouts[namespace] = bm.NamespaceBundles(namespace, bm.parse_boundaries(ns_rows[0]["boundaries"]))
    if not layouts:
        findings.append(Finding("namespaces/", "(files)", "no namespace bundle layouts"))
    if (root / layout.ISOLATION_POLICIES).is_file():  # optional
        doc = read(layout.ISOLATION_POLICIES)
        if doc is not None:
            parsed = _parse(cp.parse_isolation_policies, layout.ISOLATION_POLICIES, findings, doc) or ([], [])
            findings += [Finding(layout.ISOLATION_POLICIES, pr.field, pr.reason) for pr in parsed[1]]

    owners: dict[str, list[str]] = defaultdict(list)
    for broker in brokers:
        if layout.ownership(broker) in missing_parts:
            continue
        rel = layout.ownership(broker)
        doc = read(rel)
        if doc is None:
            continue
        own_rows, problems = _parse(ft.parse_ownership, rel, findings, doc, broker) or ([], [])
        findings += [Finding(rel, pr.field, pr.reason) for pr in problems]
        for r in own_rows:
            owners[r["bundle"]].append(broker)
            if r["namespace"] in layouts and r["bundle_range"] not in {b.range for b in layouts[r["namespace"]].bundles}:
                findings.append(Finding(rel, r["bundle"], "owned bundle is not in the namespace's bundle layout"))
    ownership_complete = not any(m.startswith("ownership/") for m in missing_parts)
    for namespace, lay in (layouts.items() if ownership_complete else ()):
        for b in lay.bundles:  # a bundle nobody looked up yet has no owner (Pulsar assigns on first lookup)
            holders = owners.get(b.name, [])
            if len(holders) > 1:
                findings.append(Finding("ownership/", b.name, f"expected at most one owner, got {holders}"))
    for bundle, holders in owners.items():
        for h in holders:
            if h not in brokers:
                findings.append(Finding("ownership/", bundle, f"owner {h} is not a live broker"))

    same_cycle = rows[0]["load_reports_from"] != "metadata-store"
    for broker in brokers:
        _check_broker(read, broker, layouts, owners, tolerance, findings, missing_parts, same_cycle)
    return findings


def _check_broker(read, broker, layouts, owners, tolerance, findings, missing_parts, same_cycle: bool) -> None:
    """``same_cycle``: the load report is of the stats cycle of ``topics/`` (the admin API's, or the generator's),
    so topic sums must equal its ``lastStats``; the leader's copy from the metadata store may be a minute older."""
    rel_report, rel_topics = layout.local_broker_data(broker), layout.topic_stats(broker)
    if rel_report in missing_parts:
        return
    report = read(rel_report)
    topics = None if rel_topics in missing_parts else read(rel_topics)
    if report is None:
        return
    parsed = _parse(fb.parse_local_broker_data, rel_report, findings, report, broker)
    if parsed is None:
        return
    broker_rows, problems, stat_rows, stat_problems = parsed
    findings += [Finding(rel_report, pr.field, pr.reason) for pr in problems + stat_problems]
    stats = {r["bundle"]: r for r in stat_rows}
    # lastStats is the broker's live stats map (PulsarStats.getBundleStats), which its stats thread clears and
    # refills every statsUpdateFrequencyInSecs, while the totals were summed from it at the report's update: a report
    # written after a refill holds newer values there (a real 4.0.7 broker: 255.6 msg/s in its total, 253.8 in its
    # lastStats), one written during a refill part of its bundles (144.2 msg/s, 3 of 8 bundles with 75.2). So the
    # rule is silver.broker_usage's totals_match_bundles: within 1 %, or fewer bundles than counted and totals above
    if broker_rows:
        b = broker_rows[0]
        refilling = len(stats) < (b["num_bundles"] or 0)
        for total, col in (("msgRateIn", "msg_rate_in"), ("msgThroughputIn", "msg_throughput_in")):
            s = sum(r[col] for r in stat_rows)
            if not _close(b[col], s, REFILL_TOLERANCE) and not (refilling and b["msg_rate_in"] >= sum(
                    r["msg_rate_in"] for r in stat_rows)):
                findings.append(Finding(rel_report, total, f"broker total {b[col]:.6g} != sum of lastStats {s:.6g}"))
    # lastStats is as old as the broker's last load report (up to loadBalancerReportUpdateMaxIntervalMinutes):
    # bundles it moved away since are no contradiction, so ownership is not compared with it
    if topics is None:
        return
    topic_rows, problems = _parse(ft.parse_topic_stats, rel_topics, findings, topics, broker) or ([], [])
    findings += [Finding(rel_topics, pr.field, pr.reason) for pr in problems]
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for t in topic_rows:
        lay = layouts.get(t["namespace"])
        if lay is not None:
            expected = lay.find_bundle(t["topic"]).range
            if expected != t["bundle_range"] and not _split_since(t["bundle_range"], expected):
                findings.append(Finding(rel_topics, t["topic"],
                                        f"hashes (CRC-32) into bundle {expected}, reported under {t['bundle_range']}"))
        agg = sums[t["bundle"]]
        for col in ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out", "producer_count",
                    "consumer_count"):
            agg[col] += t[col]
        agg["topics"] += 1
    busy = {n: a["msg_rate_in"] + a["msg_rate_out"] for n, a in sums.items()
            if broker in owners.get(n, []) and a["msg_rate_in"] + a["msg_rate_out"] > 0}
    # the leader's copy may be a report interval behind a bundle that just arrived (seen on a real cluster): only a
    # report of the same stats cycle contradicts its ownership so (gold/pathologies looks across snapshots)
    if same_cycle and busy and not any(n in stats for n in busy) and broker_rows \
            and broker_rows[0]["msg_rate_in"] + broker_rows[0]["msg_rate_out"] == 0:
        findings.append(Finding(rel_report, "lastStats", f"lists none of the {len(busy)} bundle(s) the broker owns, "
                                f"whose topics carry {sum(busy.values()):.6g} msg/s, and 0 msg/s: a broken or stale "
                                "load reporter (the leader balances this broker as idle)"))
    for name, agg in sums.items() if same_cycle else ():
        s = stats.get(name)
        if s is None:
            ns, rng = name.rsplit("/", 1)
            in_layout = ns in layouts and rng in {b.range for b in layouts[ns].bundles}
            if in_layout and broker not in owners.get(name, []):  # not split since, not acquired since the report
                findings.append(Finding(rel_topics, name, "bundle has topics but no lastStats entry in the load report, "
                                                          "and the broker does not own it"))
            continue
        for col in ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out"):
            if not topic_stats.sum_agrees(s[col], agg[col], int(agg["topics"]), tolerance):
                findings.append(Finding(rel_topics, f"{name}.{col}", f"topic sum {agg[col]:.6g} != lastStats {s[col]:.6g} "
                                        f"(printed values are cut to {topic_stats.DECIMALS} decimals, never above)"))
        for col in ("topics", "producer_count", "consumer_count"):
            if s[col] != agg[col]:
                findings.append(Finding(rel_topics, f"{name}.{col}", f"topic count {agg[col]:g} != lastStats {s[col]:g}"))


def _split_since(reported: str, current: str) -> bool:
    """The bundle a topic was reported under contains the one the layout now puts it in: the bundle was split
    between the reads of the snapshot (a collection is not atomic)."""
    lo, up = bm.parse_range(reported)
    c_lo, c_up = bm.parse_range(current)
    return lo <= c_lo and c_up <= up and (lo, up) != (c_lo, c_up)
