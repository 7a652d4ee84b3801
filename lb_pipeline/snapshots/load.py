"""Load one snapshot directory into plain Python (Pulsar-shaped JSON per part), for what-ifs on one instant.

The nightly pipeline reads snapshots with Spark; this loader is for the CLI and tests, where one snapshot of
one cluster fits in memory. Malformed files raise :class:`InputError` naming the file and the field; a config value
Pulsar cannot convert is left out, as Pulsar leaves it, and named in ``Snapshot.notes``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from lb_pipeline.algorithms.shedding.isolation import isolation_policies
from lb_pipeline.algorithms.shedding.selection import ClusterState
from lb_pipeline.errors import InputError
from lb_pipeline.formats import cluster as cp
from lb_pipeline.formats.brokers import parse_bundle_data, parse_local_broker_data
from lb_pipeline.formats.topics import parse_ownership, parse_topic_stats
from lb_pipeline.formats.values import FileProblem, load_json, max_file_bytes, parsed_whole
from lb_pipeline.model.bundles import NamespaceBundles, parse_boundaries
from lb_pipeline.model.config import DEFAULT_PROFILE, PulsarConfig, config_from_snapshot
from lb_pipeline.model.releases import profile_for
from lb_pipeline.snapshots import layout


@dataclass
class Snapshot:
    directory: Path
    manifest: dict
    brokers: list[str]
    leader: str | None
    reports: dict[str, dict]  # broker → LocalBrokerData
    topics: dict[str, dict]  # broker → broker-stats topics
    ownership: dict[str, str]  # bundle full name → owner broker
    layouts: dict[str, NamespaceBundles]
    groups: dict[str, str | None]  # namespace → anti-affinity group
    bundle_data: dict[str, dict]  # bundle full name → BundleData
    config: PulsarConfig
    failure_domains: dict[str, str] = field(default_factory=dict)  # broker → domain
    isolation: dict[str, dict] = field(default_factory=dict)  # isolation policy name → policy
    notes: list[str] = field(default_factory=list)  # what was left out, and why

    def cluster_state(self) -> ClusterState:
        """What placement reads besides the load: brokers with a load report (Pulsar's available brokers),
        isolation policies, anti-affinity groups and failure domains."""
        return ClusterState([b for b in self.brokers if b in self.reports], isolation_policies(self.isolation),
                            dict(self.groups), dict(self.failure_domains))

    @property
    def timestamp_ms(self) -> int:
        return int(self.manifest["snapshotTimestampMs"])

    def bundle_topics(self) -> dict[str, dict[str, dict]]:
        """bundle full name → topic name → topic stats, over all brokers' ``broker-stats topics``."""
        out: dict[str, dict[str, dict]] = {}
        for doc in self.topics.values():
            for ns, bundles in doc.items():
                for rng, domains in bundles.items():
                    target = out.setdefault(f"{ns}/{rng}", {})
                    for topics in domains.values():
                        target.update(topics)
        return out


def read_json(root: Path, rel: str, required: bool = True, check=lambda doc: doc):
    """One file of the snapshot ``root``, refused (an :class:`InputError`) where ingest would refuse it or where
    ``check(doc)`` raises a :class:`FileProblem`; what ``check`` returns."""
    path = root / rel
    if path.is_symlink() or not path.resolve().is_relative_to(root.resolve()):  # ingest's boundary: no link followed
        raise InputError(str(path), "(path)", "a regular file inside the snapshot, not a symbolic link or behind one")
    if not path.is_file():
        if required:
            raise InputError(str(path), "(file)", "the file to exist (see docs/snapshot-format.md)")
        return None
    if path.stat().st_size > max_file_bytes():
        raise InputError(str(path), "(file)", f"at most {max_file_bytes()} bytes (LB_MAX_FILE_BYTES)", path.stat().st_size)
    try:
        return check(load_json(path.read_bytes()))
    except FileProblem as exc:
        raise InputError(str(path), exc.problem.field, exc.problem.reason.removeprefix("expected ")) from None


def _refuse(path: Path, problems: list) -> None:
    if problems:
        raise InputError(str(path), problems[0].field, problems[0].reason.removeprefix("expected "))


def _checked(root: Path, rel: str, parse, broker: str) -> dict:
    """A broker's or a bundle's file as Pulsar wrote it, refused where ingest would quarantine any of it (``parse``
    is its parser in ``formats``, returning rows and problems, alternately)."""
    doc = read_json(root, rel)
    try:
        parsed = parsed_whole(parse, doc, broker)
    except FileProblem as exc:  # nothing of the file usable (an array where Pulsar writes an object)
        raise InputError(str(root / rel), exc.problem.field, exc.problem.reason.removeprefix("expected ")) from None
    _refuse(root / rel, [problem for problems in parsed[1::2] for problem in problems])
    return doc


def _config(root: Path, rel: str, notes: list[str]) -> dict[str, str | None]:
    """A config file's values. A value Pulsar cannot convert is left out with a note, as ingest quarantines that
    key alone: a broker logs it and keeps the value it had (``BrokerService.updateDynamicServiceConfiguration``)."""
    doc = read_json(root, rel, required=False)
    if doc is None:
        return {}
    try:
        rows, problems = cp.parse_config(doc, rel)
    except FileProblem as exc:  # not an object of values
        raise InputError(str(root / rel), exc.problem.field, exc.problem.reason.removeprefix("expected ")) from None
    notes += [f"{root / rel}: field '{p.field}': {p.reason}; left out, the runtime value or Pulsar's default applies"
              for p in problems]
    return {r["key"]: r["value"] for r in rows}


def load_snapshot(directory: str | Path, profile: str | None = None, with_topics: bool = True) -> Snapshot:
    """``with_topics=False`` skips the topic-level stats (the largest files) for callers that do not read them.
    ``profile``: the Pulsar version profile (default: ``$LB_PULSAR_PROFILE``, else the one of the Pulsar version the
    snapshot reports, as the nightly run takes it)."""
    root = Path(directory)
    manifest, row, config, notes = snapshot_config(root, profile)
    brokers, leader = row["brokers"], row["leader"]
    missing = set(row["missing_parts"])
    reports, topics, ownership = {}, {}, {}

    def present(rel: str) -> bool:
        """A broker's part is read unless the manifest says it was not collected; one absent without a word is
        left out too, with a note, as the nightly run goes on without it (a link or anything else is refused)."""
        if rel in missing:
            return False
        if not os.path.lexists(root / rel):
            notes.append(f"{root / rel}: missing, and not in the manifest's missingParts; left out, as the nightly "
                         "run leaves it")
            return False
        return True

    for b in brokers:
        if present(layout.local_broker_data(b)):
            reports[b] = _checked(root, layout.local_broker_data(b), parse_local_broker_data, b)
        if with_topics and present(layout.topic_stats(b)):
            topics[b] = _checked(root, layout.topic_stats(b), parse_topic_stats, b)
        if present(layout.ownership(b)):
            for bundle in _checked(root, layout.ownership(b), parse_ownership, b):
                ownership[bundle] = b
    layouts, groups = {}, {}
    for f in layout.namespace_files(root):
        ns = str(f.relative_to(root / "namespaces"))[: -len(".json")]
        ns_rows, problems = cp.parse_namespace(read_json(root, str(f.relative_to(root))), ns)
        _refuse(f, problems)
        ns = ns_rows[0]["namespace"]  # the file's own name for it (a ':' cannot be in a file name)
        layouts[ns] = NamespaceBundles(ns, parse_boundaries(ns_rows[0]["boundaries"]))
        groups[ns] = ns_rows[0]["anti_affinity_group"]
    bundle_data = {}
    for f in sorted((root / "lb" / "bundle-data").glob("*/*/*.json")):
        bundle = layout.name_of(str(f.relative_to(root / "lb" / "bundle-data"))[: -len(".json")])
        try:  # ingest quarantines a bad file's one row and goes on without it (a string for a rate had crashed here)
            bundle_data[bundle] = _checked(root, str(f.relative_to(root)), parse_bundle_data, bundle)
        except InputError as exc:
            notes.append(f"{exc}; left out, as the nightly run leaves it")
    domains = {}
    for domain, v in (read_json(root, layout.FAILURE_DOMAINS, required=False) or {}).items():
        for b in (v or {}).get("brokers", []):
            domains[b] = domain
    isolation, problems = cp.isolation_policy_map(read_json(root, layout.ISOLATION_POLICIES, required=False) or {})
    _refuse(root / layout.ISOLATION_POLICIES, problems)  # a policy ingest would quarantine
    return Snapshot(root, manifest, brokers, leader, reports, topics, ownership, layouts, groups, bundle_data,
                    config, domains, isolation, notes)


def snapshot_config(directory: str | Path, profile: str | None = None) -> tuple[dict, dict, PulsarConfig, list[str]]:
    """(the manifest, its parsed row, the configuration the snapshot records, notes): the leader's runtime config
    overlaid with the dynamic overrides, as the nightly run reads it, without reading the rest of the snapshot."""
    root = Path(directory)
    if not root.is_dir():
        raise InputError(str(root), "(directory)", "a snapshot directory")
    manifest = read_json(root, layout.MANIFEST)
    rows, problems = cp.parse_manifest(manifest)
    if not rows:
        _refuse(root / layout.MANIFEST, problems)
    notes = [f"{root / layout.MANIFEST}: field '{p.field}': {p.reason}" for p in problems]  # beside a row: a repeat
    leader = rows[0]["leader"]
    runtime = _config(root, layout.runtime_config(leader), notes) if leader else {}
    dynamic = _config(root, layout.DYNAMIC_CONFIG, notes)
    profile = profile or os.environ.get("LB_PULSAR_PROFILE") or profile_for(rows[0]["pulsar_version"], DEFAULT_PROFILE)
    return manifest, rows[0], config_from_snapshot(runtime, dynamic, profile), notes
