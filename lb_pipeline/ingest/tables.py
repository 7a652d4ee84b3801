"""The bronze tables: which files of a snapshot feed each, their columns, and how each file is parsed.

Every row also carries ``cluster``, ``snapshot_ts``, ``snapshot_date`` and ``source_file`` (``COMMON``); where a
file sits in the landing folder (``locate``) says which cluster and snapshot it belongs to.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from lb_pipeline.formats import brokers as fb
from lb_pipeline.formats import cluster as cp
from lb_pipeline.formats import events as fe
from lb_pipeline.formats import report_writes as frw
from lb_pipeline.formats import topics as ft
from lb_pipeline.formats.values import Problem
from lb_pipeline.snapshots.layout import (ISOLATION_POLICIES, LOGS, NAMESPACE_GLOBS, REPORT_WRITES, TS_FORMAT,
                                         broker_from_file_stem, name_of)

COMMON = "cluster string, snapshot_ts timestamp, snapshot_date string, source_file string"
_SNAPSHOT_PATH = re.compile(r"/([^/]+)/([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}Z)/(.+)$")  # ASCII digits
_UNDER_ROOT = re.compile(r"([^/]+)/([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}Z)/(.+)", re.S)


@dataclass(frozen=True)
class BronzeTable:
    name: str
    globs: tuple[str, ...]  # relative to a snapshot directory
    schema: str  # table columns after COMMON
    parse: Callable[[object, str], tuple[list[dict], list[Problem]]]  # (json, relative path) → rows
    text: bool = False  # lines of text (a log), not a JSON document


def _stem(relative: str) -> str:
    return relative.rsplit("/", 1)[-1][: -len(".json")]


def _between(relative: str, prefix: str) -> str:
    return relative[len(prefix) : -len(".json")]


def _brokers(doc, rel):
    rows, problems, _, _ = fb.parse_local_broker_data(doc, broker_from_file_stem(_stem(rel)))
    return rows, problems


def _bundle_reports(doc, rel):
    _, _, rows, problems = fb.parse_local_broker_data(doc, broker_from_file_stem(_stem(rel)))
    return rows, problems


def _config(doc, rel):
    if rel == ISOLATION_POLICIES:
        return cp.parse_isolation_policies(doc)
    source = "dynamic" if rel == "config/dynamic.json" else "runtime:" + broker_from_file_stem(_stem(rel))
    return cp.parse_config(doc, source)


_TA = ("num_samples int, max_samples int, msg_rate_in double, msg_rate_out double, msg_throughput_in double, "
       "msg_throughput_out double")
TABLES: dict[str, BronzeTable] = {t.name: t for t in (
    BronzeTable("snapshots", ("manifest.json",),
                "format_version int, snapshot_timestamp_ms long, pulsar_version string, load_manager string, "
                "leader string, brokers array<string>, complete boolean, missing_parts array<string>, tool string, "
                "load_reports_from string, bundle_data_written_ms long",
                lambda doc, rel: cp.parse_manifest(doc)),
    BronzeTable("broker_reports", ("lb/brokers/*.json",),
                "broker string, cpu_usage double, cpu_limit double, memory_usage double, memory_limit double, "
                "direct_memory_usage double, direct_memory_limit double, bandwidth_in_usage double, "
                "bandwidth_in_limit double, bandwidth_out_usage double, bandwidth_out_limit double, "
                "msg_rate_in double, msg_rate_out double, msg_throughput_in double, msg_throughput_out double, "
                "num_topics int, num_bundles int, num_consumers int, num_producers int, last_update_ms long, "
                "start_timestamp_ms long, broker_version string, load_manager string, bundles array<string>, "
                "persistent_topics_enabled boolean, non_persistent_topics_enabled boolean",
                _brokers),
    BronzeTable("bundle_reports", ("lb/brokers/*.json",),
                "broker string, bundle string, namespace string, bundle_range string, msg_rate_in double, "
                "msg_rate_out double, msg_throughput_in double, msg_throughput_out double, consumer_count int, "
                "producer_count int, topics int, cache_size long, report_position int",
                _bundle_reports),
    BronzeTable("bundle_data", ("lb/bundle-data/*/*/*.json",),
                "bundle string, namespace string, bundle_range string, topics int, "
                + ", ".join(f"short_{c}" for c in _TA.split(", ")) + ", "
                + ", ".join(f"long_{c}" for c in _TA.split(", ")),
                lambda doc, rel: fb.parse_bundle_data(doc, name_of(_between(rel, "lb/bundle-data/")))),
    BronzeTable("resource_quotas", ("lb/resource-quota/*/*/*.json",),
                "bundle string, namespace string, bundle_range string, msg_rate_in double, msg_rate_out double, "
                "bandwidth_in double, bandwidth_out double, memory double, dynamic boolean",
                lambda doc, rel: fb.parse_resource_quota(doc, name_of(_between(rel, "lb/resource-quota/")))),
    BronzeTable("topic_stats", ("topics/*.json",),
                "broker string, namespace string, bundle_range string, bundle string, topic string, domain string, "
                "msg_rate_in double, msg_rate_out double, msg_throughput_in double, msg_throughput_out double, "
                "producer_count int, consumer_count int, subscription_count int, average_msg_size double, "
                "storage_size long, backlog_size long, msg_in_count long, bytes_in_count long",
                lambda doc, rel: ft.parse_topic_stats(doc, broker_from_file_stem(_stem(rel)))),
    BronzeTable("ownership", ("ownership/*.json",),
                "broker string, bundle string, namespace string, bundle_range string, assignment string, "
                "is_active boolean",
                lambda doc, rel: ft.parse_ownership(doc, broker_from_file_stem(_stem(rel)))),
    BronzeTable("namespaces", NAMESPACE_GLOBS,
                "namespace string, boundaries array<string>, num_bundles int, anti_affinity_group string",
                lambda doc, rel: cp.parse_namespace(doc, _between(rel, "namespaces/"))),
    BronzeTable("config", ("config/dynamic.json", "config/runtime/*.json", ISOLATION_POLICIES),
                # position: an isolation policy's place in its document (the first that matches applies)
                "source string, key string, value string, position int", _config),
    BronzeTable("failure_domains", ("cluster/failure-domains.json",), "domain string, broker string",
                lambda doc, rel: cp.parse_failure_domains(doc)),
    BronzeTable("lb_events", (f"{LOGS}/*.log",),
                "broker string, line int, event_ts timestamp, kind string, strategy string, bundle string, "
                "namespace string, bundle_range string, from_broker string, to_broker string, detail string",
                lambda lines, rel: fe.parse_lb_events(lines, broker_from_file_stem(rel.rsplit("/", 1)[-1][:-4])),
                text=True),
    BronzeTable("report_writes", (REPORT_WRITES,),
                "broker string, line int, zxid long, write_ms long, version int, deleted boolean, bundle string, "
                "namespace string, bundle_range string, position int, msg_rate_in double, msg_rate_out double, "
                "msg_throughput_in double, msg_throughput_out double",
                lambda lines, rel: frw.parse_report_writes(lines), text=True),
)}


def locate(path: str, root: str | None = None) -> tuple[str, datetime, str] | None:
    """``<root>/<cluster>/<YYYY-MM-DDTHH-MM-SSZ>/<relative>`` → (cluster, snapshot time, relative path). Without
    ``root`` (the landing folder, as the listing wrote its paths), or for a path written otherwise, the first
    component named like a snapshot time with a folder before it: a landing folder that is itself inside a folder
    named so is taken for the snapshot unless ``root`` is given."""
    prefix = None if root is None else root.rstrip("/") + "/"
    if prefix is not None and path.startswith(prefix):
        m = _UNDER_ROOT.fullmatch(path[len(prefix):])
    else:
        m = _SNAPSHOT_PATH.search(path)
    if not m:
        return None
    try:
        ts = datetime.strptime(m.group(2), TS_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:  # digits in the right places, but no real time (2026-01-15T25-61-00Z)
        return None
    return m.group(1), ts, m.group(3)


