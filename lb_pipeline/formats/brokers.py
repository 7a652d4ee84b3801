"""``lb/brokers/<broker>.json`` (``LocalBrokerData``) and ``lb/bundle-data/…`` (``BundleData``) to rows."""

from __future__ import annotations

from lb_pipeline.formats.values import (
    FileProblem, Problem, Row, RowProblem, _bundle_full_name, _kind, _obj, _rows, _snake, boolean, integer, num, text,
)
from lb_pipeline.model.usage import RESOURCES

# bronze column → LocalBrokerData field: which topics a broker serves (enablePersistentTopics,
# enableNonPersistentTopics); placement's isolation step leaves out a broker that does not serve a bundle's kind
SERVES = {"persistent_topics_enabled": "persistentTopicsEnabled",
          "non_persistent_topics_enabled": "nonPersistentTopicsEnabled"}


def parse_local_broker_data(doc, broker: str) -> tuple[list[Row], list[Problem], list[Row], list[Problem]]:
    """``lb/brokers/<broker>.json`` (``LocalBrokerData``): one broker row and its ``lastStats`` rows."""
    doc = _obj(doc, "(root)")
    kind = doc.get("loadReportType", "LocalBrokerData")  # Jackson's type id of LoadManagerReport
    if kind == "LoadReport":  # its usage sits under systemResourceUsage: read as LocalBrokerData, all of it is 0
        raise FileProblem("loadReportType", "expected LocalBrokerData, got LoadReport: the broker runs "
                                            "SimpleLoadManagerImpl, Pulsar's deprecated load manager, which is not replayed")
    if kind != "LocalBrokerData":
        raise FileProblem("loadReportType", f"expected LocalBrokerData, got {kind!r}")
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
            row[_snake(k)] = integer(doc, k, k, required=False, bits=32)
        row["last_update_ms"] = integer(doc, "lastUpdate", "lastUpdate", required=False)
        row["start_timestamp_ms"] = integer(doc, "startTimestamp", "startTimestamp", required=False)
        row["broker_version"] = text(doc, "brokerVersionString", "brokerVersionString", required=False)
        row["load_manager"] = text(doc, "loadManagerClassName", "loadManagerClassName", required=False)
        for column, k in SERVES.items():  # true where a report omits them, as Jackson reads LocalBrokerData
            row[column] = boolean(doc, k, k, default=True)
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

    positions = {name: i for i, name in enumerate(stats)}  # the broker's map order, which the split triggers walk

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
            "consumer_count": integer(s, "consumerCount", field + ".consumerCount", required=False, bits=32) or 0,
            "producer_count": integer(s, "producerCount", field + ".producerCount", required=False, bits=32) or 0,
            "topics": integer(s, "topics", field + ".topics", required=False, bits=32) or 0,
            "cache_size": integer(s, "cacheSize", field + ".cacheSize", required=False) or 0,
            "report_position": positions[name],
        }

    stat_rows, stat_problems = _rows(stats.items(), bundle_row)
    return broker_rows, problems, stat_rows, stat_problems


def _time_average(obj, field: str) -> dict:
    obj = _obj(obj, field, row_level=True)
    n = integer(obj, "numSamples", field + ".numSamples", bits=32)
    most = integer(obj, "maxSamples", field + ".maxSamples", bits=32)
    # TimeAverageMessageData.update keeps numSamples = min(numSamples + 1, maxSamples) and divides by it: no
    # BundleData Pulsar writes holds more samples than its window, or a window of none
    if most < 1:
        raise RowProblem(field + ".maxSamples", f"expected a window of one sample or more, got {most}")
    if n > most:
        raise RowProblem(field + ".numSamples", f"expected at most maxSamples ({most}) samples, got {n}")
    return {
        "num_samples": n,
        "max_samples": most,
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
               "topics": integer(doc, "topics", "topics", required=False, bits=32)}
        row.update({f"short_{k}": v for k, v in short.items()})
        row.update({f"long_{k}": v for k, v in long_.items()})
        return [row], []
    except RowProblem as exc:
        return [], [exc.problem]


def parse_resource_quota(doc, bundle: str) -> tuple[list[Row], list[Problem]]:
    """``lb/resource-quota/<tenant>/<ns>/<range>.json`` (``ResourceQuota``, set by an admin): what the modular leader
    starts a bundle's averages from where it has no stored ``BundleData`` (``getBundleDataOrDefault``). A field
    the JSON lacks is ``ResourceQuota``'s default (0; ``dynamic`` true), as Jackson reads it."""
    doc = _obj(doc, "(root)")
    try:
        namespace, rng = _bundle_full_name(bundle, "(path)")
        row = {"bundle": bundle, "namespace": namespace, "bundle_range": rng}
        for k in ("msgRateIn", "msgRateOut", "bandwidthIn", "bandwidthOut", "memory"):
            row[_snake(k)] = num(doc, k, k, required=False, default=0.0)
        row["dynamic"] = boolean(doc, "dynamic", "dynamic", default=True)
        return [row], []
    except RowProblem as exc:
        return [], [exc.problem]
