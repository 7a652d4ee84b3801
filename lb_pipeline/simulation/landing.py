"""A day's history straight from a landing folder, without Spark: the operator's quick what-if path.

Reads only what the simulation needs — each snapshot's ``lb/brokers/*.json`` (``LocalBrokerData`` with its
``lastStats``) through the same parser as ingest, each snapshot's configuration (as its leader ran it), and the
topic-level stats (``topics/<broker>.json``) of the brokers that own a bundle past a split threshold, for the
simulated splits.
A file that does not parse is left out and named in the notes, as ingest would quarantine it.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd

from lb_pipeline.errors import InputError, LbError
from lb_pipeline.algorithms.splits.triggers import SplitLimits
from lb_pipeline.formats.brokers import parse_bundle_data, parse_local_broker_data, parse_resource_quota
from lb_pipeline.formats.cluster import isolation_policy_map, parse_manifest
from lb_pipeline.formats.topics import parse_topic_stats
from lb_pipeline.model.at_start import Shot, leader_history
from lb_pipeline.model.bundles import topic_hash
from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.formats.values import FileProblem, load_json, parsed_whole
from lb_pipeline.simulation.bundle_set import PROFILE_COLUMNS
from lb_pipeline.simulation.history import NO_LOAD_REPORT
from lb_pipeline.simulation.landing_events import log_events
from lb_pipeline.simulation.landing_files import read_doc
from lb_pipeline.simulation.leader_averages import with_replayed
from lb_pipeline.simulation.policies import Policies
from lb_pipeline.snapshots import layout
from lb_pipeline.snapshots.load import snapshot_config


def snapshot_dirs(landing: str | Path, day: str, cluster: str | None = None) -> tuple[str, list[Path]]:
    root = Path(landing)
    clusters = [p.name for p in layout.folders_in(root)] if root.is_dir() else []
    if not clusters:
        raise LbError(f"{root}: no cluster folders (expected <landing>/<cluster>/<snapshot time>/)")
    if cluster is None:
        if len(clusters) > 1:
            raise LbError(f"{root} holds several clusters ({', '.join(clusters)}); choose one with --cluster")
        cluster = clusters[0]
    if cluster not in clusters:
        raise LbError(f"{root}: no cluster {cluster!r}; found {', '.join(clusters)}")
    unlisted = []
    dirs = [p for p in layout.folders_in(root / cluster, unlisted) if p.name.startswith(day)]
    for folder, why in unlisted:
        raise LbError(f"{folder}: {why}")
    if len(dirs) < 2:
        raise LbError(f"{root / cluster}: {len(dirs)} snapshot(s) on {day}; the simulation needs two or more")
    return cluster, dirs


def only_day(landing: str | Path, cluster: str | None = None) -> str:
    """The one UTC day of the cluster's snapshots in ``landing``; an error naming the days when there are several."""
    root = Path(landing)
    clusters = [cluster] if cluster else [p.name for p in layout.folders_in(root)] if root.is_dir() else []
    days = sorted({p.name[:10] for c in clusters for p in layout.folders_in(root / c) if layout.snapshot_day(p.name)})
    if len(days) != 1:
        raise LbError(f"{root}: snapshots of {len(days)} days ({', '.join(days) or 'none'}); choose one with --day")
    return days[0]


def read_history(landing: str | Path, day: str, cluster: str | None = None, profile: str | None = None):
    """(cluster, broker rows, bundle rows, the configuration the leader runs at the last snapshot, notes,
    per-snapshot policies, topic rows of the bundles that can split, what its leader ran over the day as
    ``ClusterConfigs``)."""
    cluster, dirs = snapshot_dirs(landing, day, cluster)
    root = Path(landing).resolve()
    brokers, bundles, notes, policies, read = [], [], [], Policies(), []
    for d in dirs:
        try:
            ts = pd.Timestamp(datetime.strptime(d.name, layout.TS_FORMAT), tz="UTC")
        except ValueError:
            notes.append(f"{d}: not a snapshot folder name ({layout.TS_FORMAT}); left out")
            continue
        policies.add(int(ts.timestamp() * 1000), *_policies(d, root, notes))
        read.append((d, ts))
        reports, listed = sorted((d / "lb" / "brokers").glob("*.json")), _listed_brokers(d)
        if not reports:
            notes.append(NO_LOAD_REPORT.format(d))
        for f in reports:
            if listed is not None and layout.broker_from_file_stem(f.stem) not in listed:  # as ingest quarantines it
                notes.append(f"{f}: broker: expected a broker listed in manifest.json, got "
                             f"{layout.broker_from_file_stem(f.stem)!r}; left out")
                continue
            parsed = _parsed(parse_local_broker_data, f, root, notes)
            if parsed is None:
                continue
            b_rows, b_problems, s_rows, s_problems = parsed
            for p in b_problems + s_problems:
                notes.append(f"{f}: {p.field}: {p.reason}; left out")
            brokers += [{**r, "cluster": cluster, "snapshot_ts": ts} for r in b_rows]
            bundles += [{**r, "cluster": cluster, "snapshot_ts": ts} for r in s_rows]
    configs = _configs(cluster, read, brokers, profile, notes)
    config = configs.of(cluster)
    bundles = pd.DataFrame(bundles)
    topics = _split_topics(read, bundles, SplitLimits.from_config(config), root, notes)
    return cluster, pd.DataFrame(brokers), bundles, config, notes, policies, topics, configs


def read_leader(landing: str | Path, day: str, cluster: str | None, notes: list[str],
                bundles: pd.DataFrame | None = None):
    """(the leader's stored ``BundleData`` rows, the brokers' logged events or None without logs, when each
    snapshot's were written, the bundles' ``ResourceQuota`` rows) of the day: what ``leader_averages`` reads. With
    ``bundles`` (``read_history``'s bundle rows), at each snapshot with every report write kept, the leader's
    averages replayed from them in place of its stored ones (``landing_writes``). A file that does not parse is
    named in ``notes``."""
    from lb_pipeline.simulation.landing_writes import replayed_averages

    cluster, dirs = snapshot_dirs(landing, day, cluster)
    averages, written = read_bundle_data(landing, dirs, notes)
    events, lines = log_events(dirs, notes)
    if bundles is not None:
        averages = with_replayed(averages, replayed_averages(dirs, Path(landing).resolve(), cluster, averages, written,
                                                             bundles, events if lines else None, notes))
    return averages, events if lines else None, written, read_quotas(landing, dirs, notes)


def read_quotas(landing: str | Path, dirs: list[Path], notes: list[str]) -> pd.DataFrame:
    """The bundles' ``ResourceQuota`` (``lb/resource-quota``, ``collect --metadata-store``) of each snapshot, as
    ``bronze/resource_quotas`` rows with the snapshot's time; a file that does not parse is left out and named."""
    root, rows = Path(landing).resolve(), []
    for d in dirs:
        try:
            ts = pd.Timestamp(datetime.strptime(d.name, layout.TS_FORMAT), tz="UTC")
        except ValueError:
            continue  # read_history says so
        rows += [{**r, "snapshot_ts": ts} for r in _bundle_files(d / "lb" / "resource-quota", root, parse_resource_quota,
                                                                 notes)]
    return pd.DataFrame(rows)


def _bundle_files(base: Path, root: Path, parse, notes: list[str]) -> list[dict]:
    """The rows ``parse`` makes of each ``<tenant>/<namespace>/<range>.json`` under ``base`` (named by the bundle)."""
    rows = []
    for f in sorted(base.glob("*/*/*.json")):
        doc = read_doc(f, root, notes)
        if doc is None:
            continue
        name = layout.name_of(str(f.relative_to(base))[: -len(".json")])
        try:
            got, problems = parsed_whole(parse, doc, name)
        except FileProblem as exc:
            notes.append(f"{f}: {exc}; left out")
            continue
        notes += [f"{f}: {p.field}: {p.reason}; left out" for p in problems]
        rows += got
    return rows


def read_bundle_data(landing: str | Path, dirs: list[Path], notes: list[str]) -> tuple[pd.DataFrame, dict[int, int]]:
    """The leader's stored ``BundleData`` (``lb/bundle-data``, ``collect --metadata-store``) of each snapshot, as
    ``bronze/bundle_data`` rows with the snapshot's time, and per snapshot (epoch ms) when the leader wrote them (the
    manifest's ``bundleDataWrittenMs``); a file that does not parse is left out and named."""
    root, rows, written = Path(landing).resolve(), [], {}
    for d in dirs:
        try:
            ts = pd.Timestamp(datetime.strptime(d.name, layout.TS_FORMAT), tz="UTC")
        except ValueError:
            continue  # read_history says so
        manifest = read_doc(d / layout.MANIFEST, root, [])
        try:
            got, _ = parse_manifest(manifest) if manifest is not None else ([], [])
        except FileProblem:
            got = []
        if got and got[0]["bundle_data_written_ms"] is not None:
            written[int(ts.timestamp() * 1000)] = got[0]["bundle_data_written_ms"]
        rows += [{**r, "snapshot_ts": ts} for r in _bundle_files(d / "lb" / "bundle-data", root, parse_bundle_data,
                                                                 notes)]
    return pd.DataFrame(rows), written


def _configs(cluster: str, snapshots, brokers: list[dict], profile: str | None, notes: list[str]) -> ClusterConfigs:
    """What the leader ran (``model.at_start``), from each snapshot's manifest, its leader's runtime config and the
    dynamic overrides, as ``transforms.config.cluster_configs`` reads it from bronze; the last snapshot's notes on
    values left out. A snapshot whose manifest cannot be read is left out of them (named), unless it is the last:
    that one's configuration is the simulation's."""
    starts = {(r["snapshot_ts"], r["broker"]): r.get("start_timestamp_ms") for r in brokers}
    shots, last_notes = [], []
    for k, (d, ts) in enumerate(snapshots):
        try:
            _, row, config, last_notes = snapshot_config(d, profile)
        except InputError as exc:
            if k == len(snapshots) - 1:
                raise
            notes.append(f"{d}: {exc}; its configuration is left out")
            continue
        shots.append(Shot(int(ts.timestamp() * 1000), row["leader"], starts.get((ts, row["leader"])), config))
    if not shots:
        raise LbError("no snapshot folder of the day is named YYYY-MM-DDTHH-MM-SSZ with a readable manifest")
    changes, running, restarts = leader_history(shots)
    notes += last_notes + running
    return ClusterConfigs({}, changes[-1][1], {cluster: changes}, {cluster: running}, {cluster: restarts})


def _split_topics(snapshots, bundles: pd.DataFrame, limits: SplitLimits, root: Path, notes: list[str]) -> pd.DataFrame:
    """Topic rows of the bundles past a split threshold at some snapshot, from their owners' topic files."""
    columns = ["bundle", "snapshot_ts", "topic_hash", *PROFILE_COLUMNS]
    if bundles.empty:
        return pd.DataFrame(columns=columns)
    b = bundles.fillna(0)
    past = limits.past(b["topics"], b["producer_count"] + b["consumer_count"], b["msg_rate_in"] + b["msg_rate_out"],
                       b["msg_throughput_in"] + b["msg_throughput_out"])
    hot = set(b.loc[(b["topics"] >= 2) & past, "bundle"])
    owners = bundles[bundles["bundle"].isin(hot)].groupby("snapshot_ts")["broker"].agg(set).to_dict()
    rows = []
    for d, ts in snapshots:
        for f in sorted((d / "topics").glob("*.json")):
            if layout.broker_from_file_stem(f.stem) not in owners.get(ts, ()):
                continue
            parsed = _parsed(parse_topic_stats, f, root, notes)
            if parsed is None:
                continue
            got, problems = parsed
            notes += [f"{f}: {p.field}: {p.reason}; left out" for p in problems]
            rows += [{**{c: r[c] for c in PROFILE_COLUMNS}, "bundle": r["bundle"], "snapshot_ts": ts,
                      "topic_hash": topic_hash(r["topic"])} for r in got if r["bundle"] in hot]
    return pd.DataFrame(rows, columns=columns)


def _listed_brokers(d: Path) -> set[str] | None:
    """The brokers the snapshot's manifest lists; None when it cannot be read (``_configs`` says so)."""
    try:
        rows, _ = parse_manifest(load_json((d / layout.MANIFEST).read_bytes()))
    except (OSError, FileProblem):
        return None
    return set(rows[0]["brokers"] or []) if rows else None  # a problem beside a row: a broker listed twice, kept once


def _parsed(parse, path: Path, root: Path, notes: list[str]):
    """``parse(document, broker)`` of a broker's file, or None when nothing of it is usable (named in the notes, as
    ingest quarantines the whole file: unreadable, or an array where Pulsar writes an object)."""
    doc = read_doc(path, root, notes)
    if doc is None:
        return None
    try:
        return parsed_whole(parse, doc, layout.broker_from_file_stem(path.stem))
    except FileProblem as exc:
        notes.append(f"{path}: {exc}; left out")
        return None


def _policies(d: Path, root: Path, notes: list[str]) -> tuple[dict, dict, dict]:
    """(namespace → anti-affinity group, broker → failure domain, isolation policies) of one snapshot."""
    groups = {}
    for f in layout.namespace_files(d):
        doc = read_doc(f, root, notes)
        if isinstance(doc, dict) and isinstance(doc.get("antiAffinityGroup"), str):
            groups[str(f.relative_to(d / "namespaces"))[: -len(".json")]] = doc["antiAffinityGroup"]
    domains = {}
    for domain, v in (read_doc(d / layout.FAILURE_DOMAINS, root, notes) or {}).items():
        for b in (v or {}).get("brokers", []) if isinstance(v, dict) else []:
            domains[b] = domain
    path = d / layout.ISOLATION_POLICIES
    isolation, problems = isolation_policy_map(read_doc(path, root, notes) or {})
    notes += [f"{path}: {p.field}: {p.reason}; left out" for p in problems]
    return groups, domains, isolation
