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
