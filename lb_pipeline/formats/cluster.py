"""Parsers for the cluster-level files of a snapshot: the manifest, namespaces (bundle layout, anti-affinity
group), configuration, failure domains and namespace isolation policies. Same contract as ``parsers``:
``(rows, problems)``, never an exception for bad content."""

from __future__ import annotations

import json
import re
from collections import Counter

from lb_pipeline.formats.values import FileProblem, Problem, Row, RowProblem, _kind, _obj, _rows, boolean, integer, text
from lb_pipeline.model import names, regex
from lb_pipeline.model.config import value_problem

ISOLATION_SOURCE = "isolation-policies"  # bronze/config rows holding one isolation policy each (value: its JSON)


def parse_namespace(doc, namespace: str) -> tuple[list[Row], list[Problem]]:
    """``namespaces/<tenant>/<ns>.json``: ``{"namespace": …, "bundles": BundlesData, "antiAffinityGroup": …}``; the
    name inside the file wins over the one the path gives (a ``:`` cannot be in a file name)."""
    doc = _obj(doc, "(root)")
    named = doc.get("namespace", namespace)
    if problem := names.namespace_problem(named):
        return [], [Problem("namespace", problem)]
    namespace = named
    bundles = doc.get("bundles")
    if not isinstance(bundles, dict):
        return [], [Problem("bundles", f"expected a BundlesData object, got {_kind(bundles)}")]
    bounds = bundles.get("boundaries")
    if not isinstance(bounds, list) or len(bounds) < 2 or not all(isinstance(b, str) for b in bounds):
        return [], [Problem("bundles.boundaries", "expected an array of at least 2 hex strings")]
    try:
        values = [int(b, 16) for b in bounds]
    except ValueError:
        return [], [Problem("bundles.boundaries", f"expected hex strings like 0x40000000, got {bounds[:4]}")]
    if values[0] != 0 or values[-1] != 0xFFFFFFFF:
        return [], [Problem("bundles.boundaries", "expected the first boundary 0x00000000 and the last 0xffffffff")]
    if any(b <= a for a, b in zip(values, values[1:])):
        return [], [Problem("bundles.boundaries", "expected strictly increasing boundaries")]
    group = doc.get("antiAffinityGroup")
    if group is not None and not isinstance(group, str):
        return [], [Problem("antiAffinityGroup", f"expected a string, got {_kind(group)}")]
    return [{"namespace": namespace, "boundaries": [f"0x{v:08x}" for v in values], "num_bundles": len(values) - 1,
             "anti_affinity_group": group}], []


def parse_config(doc, source: str) -> tuple[list[Row], list[Problem]]:
    """``config/dynamic.json`` or ``config/runtime/<broker>.json``: name → string value (a load-balancer number
    Pulsar could not convert is a row problem: ``config.value_problem``)."""
    doc = _obj(doc, "(root)")

    def make(key, value) -> Row:
        if isinstance(value, (dict, list)):
            raise RowProblem(key, f"expected a scalar config value, got {_kind(value)}")
        text = None if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
        if problem := value_problem(key, text):
            raise RowProblem(key, problem)
        return {"source": source, "key": key, "value": text}

    return _rows(doc.items(), make)


def parse_failure_domains(doc) -> tuple[list[Row], list[Problem]]:
    """``cluster/failure-domains.json``: domain → ``{"brokers": [...]}``."""
    doc = _obj(doc, "(root)")
    rows, problems = [], []
    for domain, v in doc.items():
        brokers = v.get("brokers") if isinstance(v, dict) else None
        if not isinstance(brokers, list) or not all(isinstance(b, str) for b in brokers):
            problems.append(Problem(f"{domain}.brokers", "expected an array of broker ids"))
            continue
        rows.extend({"domain": domain, "broker": b} for b in brokers)
    return rows, problems


def parse_manifest(doc) -> tuple[list[Row], list[Problem]]:
    doc = _obj(doc, "(root)")
    try:
        brokers = doc.get("brokers")
        if not isinstance(brokers, list) or not all(isinstance(b, str) for b in brokers):
            raise RowProblem("brokers", "expected an array of broker ids")
        for b in brokers:
            if problem := names.broker_problem(b):
                raise RowProblem("brokers", problem)
        # Pulsar lists its brokers as a set: a repeat says nothing, and counted twice it would duplicate the
        # broker's rows wherever the list is joined (the snapshot lands with each broker once; the repeat is noted)
        counts = Counter(brokers)
        repeated = [f"{b!r} {n} times" for b, n in counts.items() if n > 1]
        brokers = list(counts)  # in the manifest's order
        missing = doc.get("missingParts") or []
        return [{
            "format_version": integer(doc, "formatVersion", "formatVersion", bits=32),
            "snapshot_timestamp_ms": integer(doc, "snapshotTimestampMs", "snapshotTimestampMs"),
            "pulsar_version": text(doc, "pulsarVersion", "pulsarVersion", required=False),
            "load_manager": text(doc, "loadManagerClassName", "loadManagerClassName", required=False),
            "leader": text(doc, "leader", "leader", required=False),
            "brokers": brokers,
            "complete": boolean(doc, "complete", "complete", True),
            "manifest_cluster": text(doc, "cluster", "cluster", required=False),
            "missing_parts": [str(m) for m in missing] if isinstance(missing, list) else [str(missing)],
            "tool": text(doc, "tool", "tool", required=False),
            "load_reports_from": _load_reports_from(doc),
            "bundle_data_written_ms": _bundle_data_written(doc),
        }], [Problem("brokers", f"expected each broker listed once, got {', '.join(repeated[:3])}"
                                + (f" and {len(repeated) - 3} more repeated" if len(repeated) > 3 else "")
                                + ": each kept once")] if repeated else []
    except RowProblem as exc:
        return [], [exc.problem]


def _load_reports_from(doc: dict) -> str | None:
    """Where ``lb/brokers`` came from, as the collector says: ``metadata-store`` (the leader's copies, whose
    ``lastStats`` may be older than ``topics/``) or ``admin-api`` (each broker's fresh report); None otherwise."""
    collector = doc.get("collector")
    sources = collector.get("sources") if isinstance(collector, dict) else None
    source = sources.get("lb/brokers") if isinstance(sources, dict) else None
    return source if source in ("metadata-store", "admin-api") else None


def _bundle_data_written(doc: dict) -> int | None:
    """When the leader last wrote the ``BundleData`` the snapshot holds (epoch ms, ``collector.sources``)."""
    collector = doc.get("collector")
    sources = collector.get("sources") if isinstance(collector, dict) else None
    value = sources.get("bundleDataWrittenMs") if isinstance(sources, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 62 else None


def parse_isolation_policies(doc) -> tuple[list[Row], list[Problem]]:
    """``cluster/isolation-policies.json``: policy name → ``NamespaceIsolationData`` (namespaces, primary and
    secondary broker host regexes, a ``min_available`` auto-failover policy). One config row per policy, with its
    ``position`` in the document."""
    doc = _obj(doc, "(root)")

    def make(name, policy) -> Row:
        policy = _obj(policy, name, row_level=True)
        for key, required in (("namespaces", True), ("primary", True), ("secondary", False)):
            value = policy.get(key, [] if not required else None)
            if not isinstance(value, list) or not all(isinstance(x, str) for x in value) or (required and not value):
                raise RowProblem(f"{name}.{key}", f"expected {'a non-empty ' if required else 'an '}array of regexes")
            for x in value:
                try:
                    regex.compile_whole(x)  # the replays match with it: linear in the name, whatever the regex
                except regex.Unsupported as exc:  # (a)\1, (?=a): a backtracking engine's constructs
                    raise RowProblem(f"{name}.{key}",
                                     f"expected a regex matchable in linear time, got {x[:80]!r} ({exc})") from None
                except (re.error, OverflowError, RecursionError) as exc:  # a{99999999999}, 5,000 nested groups
                    raise RowProblem(f"{name}.{key}", f"expected a valid regex, got {x[:80]!r} ({exc})") from None
        failover = {} if policy.get("auto_failover_policy") is None else policy["auto_failover_policy"]
        if not isinstance(failover, dict) or failover.get("policy_type", "min_available") != "min_available":
            raise RowProblem(f"{name}.auto_failover_policy", "expected policy_type min_available")
        parameters = {} if failover.get("parameters") is None else failover["parameters"]
        if not isinstance(parameters, dict):  # [1] had failed the parser, and the file with it
            raise RowProblem(f"{name}.auto_failover_policy.parameters", f"expected an object, got {_kind(parameters)}")
        try:
            int(parameters.get("min_limit", 1))
        except (TypeError, ValueError, OverflowError):  # OverflowError: 1e999 reads as infinity
            raise RowProblem(f"{name}.auto_failover_policy.parameters.min_limit", "expected an integer") from None
        return {"source": ISOLATION_SOURCE, "key": name, "value": json.dumps(policy, sort_keys=True)}

    # each policy's place in the document: Pulsar applies the first whose namespace regex matches, in this order
    # (the map Jackson reads the stored document into keeps it; the admin API lists them in it)
    return _rows(((name, (k, policy)) for k, (name, policy) in enumerate(doc.items())),
                 lambda name, at: {**make(name, at[1]), "position": at[0]})


def isolation_policy_map(doc) -> tuple[dict[str, dict], list[Problem]]:
    """For readers of a landing folder without Spark: the policies ingest would land (name → policy) and the
    problems it would quarantine, a root that is not an object among them."""
    try:
        rows, problems = parse_isolation_policies(doc)
    except FileProblem as exc:
        return {}, [exc.problem]
    return {r["key"]: json.loads(r["value"]) for r in sorted(rows, key=lambda r: r["position"])}, problems
