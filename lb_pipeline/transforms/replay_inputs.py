"""The inputs of gold's replays, packed for one ``applyInPandas`` group per cluster and unpacked into the
Pulsar-shaped dicts the algorithms take (``LocalBrokerData``, ``BundleData``).

A report's ``lastStats`` keeps the order of its JSON (``report_position``): the broker wrote it from its own
``ConcurrentHashMap`` (``PulsarStats.bundleStats``), whose order is that of the table the map grew to, which no
fresh map reproduces (the real cluster of the fixtures lists 9 bundles in a 32-bucket order). The split triggers walk
it in that order, as the leader and the broker do.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.formats.brokers import SERVES

KEYS = ["cluster", "snapshot_ts", "snapshot_date"]
RESOURCES = ("cpu", "memory", "direct_memory", "bandwidth_in", "bandwidth_out")
_JSON_NAMES = {"cpu": "cpu", "memory": "memory", "direct_memory": "directMemory", "bandwidth_in": "bandwidthIn",
               "bandwidth_out": "bandwidthOut"}
BROKER = ["broker", *(f"{k}_{x}" for k in RESOURCES for x in ("usage", "limit")), "msg_rate_in", "msg_rate_out",
          "msg_throughput_in", "msg_throughput_out", "num_topics", "broker_version", "load_manager", "start_timestamp_ms",
          "persistent_topics_enabled", "non_persistent_topics_enabled"]
BUNDLE = ["broker", "bundle", "msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out",
          "consumer_count", "producer_count", "topics", "report_position"]
AVERAGE = ["bundle", *(f"{p}_{c}" for p in ("short", "long") for c in ("num_samples", "msg_rate_in", "msg_rate_out",
                                                                      "msg_throughput_in", "msg_throughput_out"))]


def reports(brokers: pd.DataFrame, bundles: pd.DataFrame) -> dict[str, dict]:
    """``LocalBrokerData``-shaped dicts from bronze rows of one snapshot, each ``lastStats`` in its JSON's order
    (rows ingested before bronze kept it come after, in the order given)."""
    stats: dict[str, dict] = {}
    if not bundles.empty:
        bundles = bundles.sort_values("report_position", kind="stable", na_position="last")
    for r in (bundles.itertuples(index=False) if not bundles.empty else ()):
        stats.setdefault(r.broker, {})[r.bundle] = {
            "msgRateIn": r.msg_rate_in, "msgRateOut": r.msg_rate_out, "msgThroughputIn": r.msg_throughput_in,
            "msgThroughputOut": r.msg_throughput_out, "consumerCount": int(r.consumer_count),
            "producerCount": int(r.producer_count), "topics": int(r.topics)}
    out = {}
    if brokers.empty:
        return out
    for r in brokers.sort_values("broker").itertuples(index=False):
        d = {_JSON_NAMES[k]: {"usage": getattr(r, f"{k}_usage"), "limit": getattr(r, f"{k}_limit")} for k in RESOURCES}
        d.update(msgRateIn=r.msg_rate_in, msgRateOut=r.msg_rate_out, msgThroughputIn=r.msg_throughput_in,
                 msgThroughputOut=r.msg_throughput_out, lastStats=stats.get(r.broker, {}),
                 bundles=sorted(stats.get(r.broker, {})), numTopics=int(r.num_topics) if pd.notna(r.num_topics) else 0)
        if r.broker_version:  # placement's version and load-manager filters read these
            d["brokerVersionString"] = r.broker_version
        if r.load_manager:
            d["loadManagerClassName"] = r.load_manager
        for column, key in SERVES.items():  # null in a lake ingested before bronze kept them: Pulsar's default
            value = getattr(r, column, None)
            if isinstance(value, (bool, np.bool_)):
                d[key] = bool(value)
        out[r.broker] = d
    return out


def bundle_data(averages: pd.DataFrame) -> dict[str, dict]:
    out = {}
    if averages.empty:
        return out
    for r in averages.itertuples(index=False):
        out[r.bundle] = {w: {"numSamples": int(getattr(r, f"{p}_num_samples")), "msgRateIn": getattr(r, f"{p}_msg_rate_in"),
                             "msgRateOut": getattr(r, f"{p}_msg_rate_out"), "msgThroughputIn": getattr(r, f"{p}_msg_throughput_in"),
                             "msgThroughputOut": getattr(r, f"{p}_msg_throughput_out")}
                         for w, p in (("shortTermData", "short"), ("longTermData", "long"))}
    return out


def kinds(**inputs: DataFrame) -> DataFrame:
    """Rows of several inputs in one typed frame (``kind`` says whose, a column another input lacks is null there),
    so that they share one applyInPandas group per cluster; packing them as JSON strings and parsing them back
    had cost most of the replay's time."""
    out = None
    for kind, df in inputs.items():
        df = df.withColumn("kind", F.lit(kind))
        out = df if out is None else out.unionByName(df, allowMissingColumns=True)
    return out


def typed_inputs(broker_reports: DataFrame, bundle_reports: DataFrame, time_averages: DataFrame,
                 meta: DataFrame) -> DataFrame:
    if "report_position" not in bundle_reports.columns:  # a lake ingested before bronze kept the JSON's order
        bundle_reports = bundle_reports.withColumn("report_position", F.lit(None).cast("int"))
    broker_reports = with_serves(broker_reports)
    return kinds(broker=broker_reports.select(*KEYS, *BROKER), bundle=bundle_reports.select(*KEYS, *BUNDLE),
                 average=time_averages.select(*KEYS, *AVERAGE), meta=meta)


def with_serves(broker_reports: DataFrame) -> DataFrame:
    """Bronze broker rows with the columns of which topics a broker serves (null where a lake ingested before
    bronze kept them)."""
    for column in SERVES:
        if column not in broker_reports.columns:
            broker_reports = broker_reports.withColumn(column, F.lit(None).cast("boolean"))
    return broker_reports


def of_kind(pdf: pd.DataFrame, kind: str, columns: list[str]) -> pd.DataFrame:
    return pdf.loc[pdf["kind"] == kind, columns]


def meta(pdf: pd.DataFrame, field: str, default: str):
    """A snapshot's one ``meta`` row (small per-snapshot maps as JSON) → the parsed value of ``field`` (``default``
    where the inputs have no such column: the leader's logged unloads when no logs were given)."""
    if field not in pdf.columns:
        return json.loads(default)
    rows = pdf.loc[pdf["kind"] == "meta", field]
    value = rows.iloc[0] if not rows.empty else None
    return json.loads(value if isinstance(value, str) else default)
