"""A report's ``lastStats`` reaches the replays in the order of its JSON: the order of the broker's own map, which
the split triggers walk (the real cluster of the fixtures lists it in an order no fresh map has)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from lb_pipeline.formats import brokers
from lb_pipeline.model.javahash import concurrent_hash_map_order
from lb_pipeline.transforms import replay_inputs as ri

FIXTURES = Path(__file__).parent / "fixtures" / "real-pulsar-4.0.7" / "lbtest"
RESOURCE_COLUMNS = {f"{k}_{x}": 1.0 for k in ri.RESOURCES for x in ("usage", "limit")}


def _real_report() -> tuple[str, dict]:
    """A report of the real cluster whose lastStats no fresh ConcurrentHashMap orders as the broker did."""
    for path in sorted(FIXTURES.glob("*/lb/brokers/*.json")):
        doc = json.loads(path.read_text())
        names = list(doc.get("lastStats", {}))
        if concurrent_hash_map_order(names) != names:
            return path.stem.replace("_", ":"), doc
    raise AssertionError("every real report is in a fresh map's order")


def test_the_replays_get_each_reports_last_stats_in_the_order_of_its_json_however_the_rows_come():
    broker, doc = _real_report()
    _, _, rows, problems = brokers.parse_local_broker_data(doc, broker)
    assert not problems and [r["report_position"] for r in rows] == list(range(len(rows)))
    shuffled = pd.DataFrame(rows).sample(frac=1.0, random_state=3)[ri.BUNDLE]
    assert list(shuffled["bundle"]) != list(doc["lastStats"])
    report_row = pd.DataFrame([{"broker": broker, **RESOURCE_COLUMNS, "msg_rate_in": 0.0, "msg_rate_out": 0.0,
                                "msg_throughput_in": 0.0, "msg_throughput_out": 0.0, "num_topics": 1,
                                "broker_version": None, "load_manager": None, "start_timestamp_ms": 0}])
    report = ri.reports(report_row, shuffled)[broker]
    assert list(report["lastStats"]) == list(doc["lastStats"])
    # rows of a lake ingested before bronze kept the order: the order given
    legacy = shuffled.assign(report_position=None)
    assert list(ri.reports(report_row, legacy)[broker]["lastStats"]) == list(shuffled["bundle"])


def test_a_bundle_serving_non_persistent_topics_is_placed_only_on_a_broker_that_serves_them():
    """From the report's JSON through bronze's row to the replay's placement: a broker whose report says
    ``nonPersistentTopicsEnabled: false`` takes no bundle the leader flagged ``hasNonPersistentTopic``, however idle
    (``LoadManagerShared.applyNamespacePolicies``); other bundles it takes as before."""
    from lb_pipeline.algorithms.shedding.common import LoadData
    from lb_pipeline.algorithms.shedding.placement import LeastLongTermMessageRate
    from lb_pipeline.algorithms.shedding.selection import ClusterState, ModularPlacement
    from lb_pipeline.model.config import PulsarConfig

    _, doc = _real_report()
    rows = []
    for broker, serves in (("idle:8080", False), ("busy:8080", None)):
        report = {**doc, "cpu": {"usage": 10.0, "limit": 100.0}, "lastStats": {}, "bundles": []}
        report.pop("nonPersistentTopicsEnabled")
        if serves is not None:
            report["nonPersistentTopicsEnabled"] = serves
        (row,), problems, _, _ = brokers.parse_local_broker_data(report, broker)
        assert not problems
        rows.append(row)
    assert [(r["persistent_topics_enabled"], r["non_persistent_topics_enabled"]) for r in rows] == \
        [(True, False), (True, True)]  # as Jackson reads a report without the field: true
    held = pd.DataFrame([{"broker": "busy:8080", "bundle": "t/other/0x00000000_0xffffffff", "msg_rate_in": 500.0,
                          "msg_rate_out": 500.0, "msg_throughput_in": 0.0, "msg_throughput_out": 0.0,
                          "consumer_count": 1, "producer_count": 1, "topics": 1, "report_position": 0}])
    reports = ri.reports(pd.DataFrame(rows)[ri.BROKER], held)  # busy holds a bundle, idle none
    assert reports["idle:8080"]["nonPersistentTopicsEnabled"] is False
    load, config = LoadData(reports), PulsarConfig()
    flagged, plain = "t/np/0x00000000_0x80000000", "t/np/0x80000000_0xffffffff"
    state = ClusterState(list(reports), non_persistent=frozenset({flagged}))
    assert ModularPlacement(LeastLongTermMessageRate()).assign(plain, load, config, state) == "idle:8080"
    assert ModularPlacement(LeastLongTermMessageRate()).assign(flagged, load, config, state) == "busy:8080"
    # a lake ingested before bronze kept the fields: Pulsar's defaults, every broker serves both
    legacy = ri.reports(pd.DataFrame(rows)[ri.BROKER].assign(non_persistent_topics_enabled=None), held)
    assert "nonPersistentTopicsEnabled" not in legacy["idle:8080"]
    assert ModularPlacement(LeastLongTermMessageRate()).assign(flagged, LoadData(legacy), config, state) == "idle:8080"
