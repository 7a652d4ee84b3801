"""Parsers from Pulsar's JSON (one snapshot file) to flat bronze rows.

Pure Python, no Spark: the bronze transforms run them inside ``mapInPandas`` so that file contents never pass
through the driver. A parser returns ``(rows, problems)``: rows are dicts in the table's column order; each
problem is a :class:`Problem` naming the field and what was expected. A problem with ``whole_file=True`` means
nothing of the file could be used; otherwise only the offending row was dropped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

from lb_pipeline.model.bundles import parse_range
from lb_pipeline.model.usage import RESOURCES

Row = dict


@dataclass(frozen=True)
class Problem:
    field: str
    reason: str
    whole_file: bool = False


class FileProblem(Exception):
    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.problem = Problem(field, reason, whole_file=True)


class RowProblem(Exception):
    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.problem = Problem(field, reason)


def load_json(content: bytes) -> object:
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem("(file)", f"expected UTF-8 text, got invalid byte at offset {exc.start}") from None
    if not text.strip():
        raise FileProblem("(file)", "expected a JSON document, got an empty file")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise FileProblem("(file)", f"expected valid JSON, got {exc.msg} at line {exc.lineno} column {exc.colno}") from None


def _reject_constant(name: str):
    raise FileProblem("(file)", f"expected finite numbers, got the non-JSON literal {name}")


def _obj(value, field: str, row_level: bool = False) -> dict:
    if not isinstance(value, dict):
        exc = RowProblem if row_level else FileProblem
        raise exc(field, f"expected a JSON object, got {_kind(value)}")
    return value


def _kind(value) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(type(value), type(value).__name__) if value is not None else "null"


def num(obj: dict, key: str, field: str, *, required: bool = True, nonneg: bool = True, default=None) -> float | None:
    """A finite number (Jackson writes doubles ≥ 1e7 as ``1.0E7``; json reads them as floats)."""
    if key not in obj or obj[key] is None:
        if required:
            raise RowProblem(field, "expected a number, but the field is missing")
        return default
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise RowProblem(field, f"expected a number, got {_kind(v)} {str(v)[:40]!r}")
    v = float(v)
    if not math.isfinite(v):
        raise RowProblem(field, f"expected a finite number, got {v}")
    if nonneg and v < 0:
        raise RowProblem(field, f"expected a number >= 0, got {v}")
    return v


def integer(obj: dict, key: str, field: str, *, required: bool = True, nonneg: bool = True) -> int | None:
    v = num(obj, key, field, required=required, nonneg=nonneg)
    if v is None:
        return None
    if v != int(v):
        raise RowProblem(field, f"expected an integer, got {v}")
    return int(v)


def text(obj: dict, key: str, field: str, *, required: bool = True) -> str | None:
    v = obj.get(key)
    if v is None:
        if required:
            raise RowProblem(field, "expected a string, but the field is missing")
        return None
    if not isinstance(v, str):
        raise RowProblem(field, f"expected a string, got {_kind(v)}")
    return v


def _bundle_full_name(name: str, field: str) -> tuple[str, str]:
    namespace, _, rng = name.rpartition("/")
    if not namespace or namespace.count("/") < 1:
        raise RowProblem(field, f"expected a bundle name tenant/namespace/0x…_0x…, got {name!r}")
    try:
        parse_range(rng)
    except ValueError as exc:
        raise RowProblem(field, str(exc)) from None
    return namespace, rng


def _rows(items, make: Callable[[str, object], Row]) -> tuple[list[Row], list[Problem]]:
    rows, problems = [], []
    for key, value in items:
        try:
            rows.append(make(key, value))
        except RowProblem as exc:
            problems.append(exc.problem)
    return rows, problems


# --------------------------------------------------------------------------------------------- broker reports
def parse_local_broker_data(doc, broker: str) -> tuple[list[Row], list[Problem], list[Row], list[Problem]]:
    """``lb/brokers/<broker>.json`` (``LocalBrokerData``): one broker row and its ``lastStats`` rows."""
    doc = _obj(doc, "(root)")
    problems: list[Problem] = []
    try:
        row: Row = {"broker": broker}
        for r in RESOURCES:
            ru = doc.get(r)
            if ru is None:  # Jackson drops nulls; a missing resource reads as usage 0 / limit 0 (percent 0)
                ru = {}
            ru = _obj(ru, r, row_level=True)
            snake = _snake(r)
            # Non-Linux brokers report bandwidth as -1/-1: keep the raw value, percentUsage() reads it as 0.
            row[f"{snake}_usage"] = num(ru, "usage", f"{r}.usage", required=False, nonneg=False, default=0.0)
            row[f"{snake}_limit"] = num(ru, "limit", f"{r}.limit", required=False, nonneg=False, default=0.0)
        for k in ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut"):
            row[_snake(k)] = num(doc, k, k)
        for k in ("numTopics", "numBundles", "numConsumers", "numProducers"):
            row[_snake(k)] = integer(doc, k, k, required=False)
        row["last_update_ms"] = integer(doc, "lastUpdate", "lastUpdate", required=False)
        row["start_timestamp_ms"] = integer(doc, "startTimestamp", "startTimestamp", required=False)
        row["broker_version"] = text(doc, "brokerVersionString", "brokerVersionString", required=False)
        row["load_manager"] = text(doc, "loadManagerClassName", "loadManagerClassName", required=False)
        bundles = doc.get("bundles", [])
        if not isinstance(bundles, list) or not all(isinstance(b, str) for b in bundles):
            raise RowProblem("bundles", "expected an array of bundle names")
        row["bundles"] = bundles
        broker_rows = [row]
    except RowProblem as exc:
        broker_rows, problems = [], [exc.problem]
    stats = doc.get("lastStats", {})
    if not isinstance(stats, dict):
        return broker_rows, problems + [Problem("lastStats", f"expected an object, got {_kind(stats)}")], [], []

    def bundle_row(name: str, s) -> Row:
        field = f"lastStats[{name}]"
        s = _obj(s, field, row_level=True)
        namespace, rng = _bundle_full_name(name, field)
        return {
            "broker": broker, "bundle": name, "namespace": namespace, "bundle_range": rng,
            "msg_rate_in": num(s, "msgRateIn", field + ".msgRateIn"),
            "msg_rate_out": num(s, "msgRateOut", field + ".msgRateOut"),
            "msg_throughput_in": num(s, "msgThroughputIn", field + ".msgThroughputIn"),
            "msg_throughput_out": num(s, "msgThroughputOut", field + ".msgThroughputOut"),
            "consumer_count": integer(s, "consumerCount", field + ".consumerCount", required=False) or 0,
            "producer_count": integer(s, "producerCount", field + ".producerCount", required=False) or 0,
            "topics": integer(s, "topics", field + ".topics", required=False) or 0,
            "cache_size": integer(s, "cacheSize", field + ".cacheSize", required=False) or 0,
        }

    stat_rows, stat_problems = _rows(stats.items(), bundle_row)
    return broker_rows, problems, stat_rows, stat_problems


def _snake(name: str) -> str:
    out = []
    for ch in name:
        if ch.isupper():
            out.append("_" + ch.lower())
        else:
            out.append(ch)
    return "".join(out)


# ---------------------------------------------------------------------------------------------- bundle data
def _time_average(obj, field: str) -> dict:
    obj = _obj(obj, field, row_level=True)
    return {
        "num_samples": integer(obj, "numSamples", field + ".numSamples"),
        "max_samples": integer(obj, "maxSamples", field + ".maxSamples"),
        "msg_rate_in": num(obj, "msgRateIn", field + ".msgRateIn"),
        "msg_rate_out": num(obj, "msgRateOut", field + ".msgRateOut"),
        "msg_throughput_in": num(obj, "msgThroughputIn", field + ".msgThroughputIn"),
        "msg_throughput_out": num(obj, "msgThroughputOut", field + ".msgThroughputOut"),
    }


def parse_bundle_data(doc, bundle: str) -> tuple[list[Row], list[Problem]]:
    """``lb/bundle-data/<tenant>/<ns>/<range>.json`` (``BundleData``)."""
    doc = _obj(doc, "(root)")
    try:
        namespace, rng = _bundle_full_name(bundle, "(path)")
        short, long_ = _time_average(doc.get("shortTermData"), "shortTermData"), _time_average(doc.get("longTermData"), "longTermData")
        row = {"bundle": bundle, "namespace": namespace, "bundle_range": rng,
               "topics": integer(doc, "topics", "topics", required=False)}
        row.update({f"short_{k}": v for k, v in short.items()})
        row.update({f"long_{k}": v for k, v in long_.items()})
        return [row], []
    except RowProblem as exc:
        return [], [exc.problem]


# -------------------------------------------------------------------------------------------- topic stats
def parse_topic_stats(doc, broker: str) -> tuple[list[Row], list[Problem]]:
    """``topics/<broker>.json`` (``broker-stats topics``): namespace → range → domain → topic → stats."""
    doc = _obj(doc, "(root)")
    rows, problems = [], []
    for namespace, bundles in doc.items():
        if not isinstance(bundles, dict):
            problems.append(Problem(namespace, f"expected an object of bundle ranges, got {_kind(bundles)}"))
            continue
        for rng, domains in bundles.items():
            try:
                parse_range(rng)
            except ValueError as exc:
                problems.append(Problem(f"{namespace}.{rng}", str(exc)))
                continue
            if not isinstance(domains, dict):
                problems.append(Problem(f"{namespace}.{rng}", f"expected an object with 'persistent', got {_kind(domains)}"))
                continue
            for domain, topics in domains.items():
                if domain not in ("persistent", "non-persistent"):
                    problems.append(Problem(f"{namespace}.{rng}.{domain}", "expected 'persistent' or 'non-persistent'"))
                    continue
                if not isinstance(topics, dict):
                    problems.append(Problem(f"{namespace}.{rng}.{domain}", f"expected an object of topics, got {_kind(topics)}"))
                    continue
                for topic, s in topics.items():
                    field = f"{namespace}.{rng}.{domain}[{topic}]"
                    try:
                        rows.append(_topic_row(broker, namespace, rng, domain, topic, s, field))
                    except RowProblem as exc:
                        problems.append(exc.problem)
    return rows, problems


def _topic_row(broker, namespace, rng, domain, topic, s, field) -> Row:
    s = _obj(s, field, row_level=True)
    if not topic.startswith(f"{domain}://{namespace}/"):
        raise RowProblem(field, f"expected a topic name starting with {domain}://{namespace}/")
    subs = s.get("subscriptions") or {}
    if not isinstance(subs, dict):
        raise RowProblem(field + ".subscriptions", f"expected an object, got {_kind(subs)}")
    consumers = 0
    for name, sub in subs.items():
        sub = _obj(sub, f"{field}.subscriptions[{name}]", row_level=True)
        cons = sub.get("consumers") or []
        if not isinstance(cons, list):
            raise RowProblem(f"{field}.subscriptions[{name}].consumers", f"expected an array, got {_kind(cons)}")
        consumers += len(cons)
    return {
        "broker": broker, "namespace": namespace, "bundle_range": rng, "bundle": f"{namespace}/{rng}",
        "topic": topic, "domain": domain,
        "msg_rate_in": num(s, "msgRateIn", field + ".msgRateIn"),
        "msg_rate_out": num(s, "msgRateOut", field + ".msgRateOut"),
        "msg_throughput_in": num(s, "msgThroughputIn", field + ".msgThroughputIn"),
        "msg_throughput_out": num(s, "msgThroughputOut", field + ".msgThroughputOut"),
        "producer_count": integer(s, "producerCount", field + ".producerCount", required=False) or 0,
        "consumer_count": consumers,
        "subscription_count": len(subs),
        "average_msg_size": num(s, "averageMsgSize", field + ".averageMsgSize", required=False),
        "storage_size": integer(s, "storageSize", field + ".storageSize", required=False),
        "backlog_size": integer(s, "backlogSize", field + ".backlogSize", required=False, nonneg=False),
        "msg_in_count": integer(s, "msgInCount", field + ".msgInCount", required=False),
        "bytes_in_count": integer(s, "bytesInCount", field + ".bytesInCount", required=False),
    }


# ---------------------------------------------------------------------- ownership, namespaces, config, domains
def parse_ownership(doc, broker: str) -> tuple[list[Row], list[Problem]]:
    """``ownership/<broker>.json`` (``brokers namespaces``): bundle full name → assignment flags."""
    doc = _obj(doc, "(root)")

    def make(name, v) -> Row:
        v = _obj(v, name, row_level=True)
        namespace, rng = _bundle_full_name(name, name)
        active = v.get("is_active", True)
        return {"broker": broker, "bundle": name, "namespace": namespace, "bundle_range": rng,
                "assignment": v.get("broker_assignment"), "is_active": bool(active)}

    return _rows(doc.items(), make)
