"""``logs/<broker>.log`` → ``bronze/lb_events``: the load manager's own lines, as a real Pulsar 4.0.7 broker wrote
them (copied from a broker log of tests/fixtures/record-real.sh), and what a file of them lands as."""

import json

import pytest

from lb_pipeline.formats.events import parse_lb_events
from lb_pipeline.ingest.files import parse_file
from lb_pipeline.ingest.tables import TABLES

REAL = """\
2026-12-02T01:32:41.604Z [metadata-store-10-1] INFO  o.a.p.b.PulsarService - This broker 127.0.0.1:8080 was elected leader
2026-12-02T01:33:37.588Z [pulsar-2-1] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - 3 brokers being considered for assignment of lb/ns-a4/0x00000000_0xffffffff
2026-12-02T01:33:47.029Z [pulsar-modular-load-manager-30-1] INFO  o.a.p.b.l.BundleSplitStrategy - The bundle lb/ns-b8/0x00000000_0xffffffff is considered to be unload. Topics: 16/12, Sessions: (16+16)/1000, Message Rate: 13.39530117277786/500 (msgs/s), Message Throughput: 6858.1/5242880 (MB/s)
2026-12-02T01:33:47.101Z [pulsar-modular-load-manager-30-1] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - Load-manager splitting bundle lb/ns-b8/0x00000000_0xffffffff and unloading true
2026-12-02T01:33:50.510Z [pulsar-ordered-OrderedExecutor-5-0] INFO  o.a.p.b.a.v.Namespaces - [null] Successfully split namespace bundle 0x00000000_0xffffffff
2026-12-02T01:33:50.809Z [pulsar-modular-load-manager-30-1] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - Successfully split namespace bundle lb/ns-b8/0x00000000_0xffffffff
2026-12-02T01:33:51.325Z [pulsar-modular-load-manager-30-1] ERROR o.a.p.b.l.i.ModularLoadManagerImpl - Failed to split namespace bundle lb/ns-b8/0x00000000_0xffffffff
2026-12-02T01:34:41.795Z [pulsar-load-manager-1-1] INFO  o.a.p.b.l.i.OverloadShedder - Attempting to shed load on 127.0.0.1:8080, which has resource usage 64.28844451904297% above threshold 60.0% -- Offloading at least 0.00752883881087555 MByte/s of traffic (cpu: 32.1%)
2026-12-02T01:35:41.800Z [pulsar-load-manager-1-1] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - [OverloadShedder] Unloading bundle: lb/ns-c16/0x80000000_0x90000000 from broker 127.0.0.1:8080 to dest broker 127.0.0.1:8082
2026-12-02T01:36:41.800Z [pulsar-load-manager-1-1] WARN  o.a.p.b.l.i.ModularLoadManagerImpl - [ThresholdShedder] The destination broker 127.0.0.1:8081 is the same as the current owner broker for Bundle lb/ns-c16/0x90000000_0xa0000000
2026-12-02T01:37:41.800Z [pulsar-load-manager-1-1] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - [UniformLoadShedder] No broker available to unload bundle lb/ns-c16/0xa0000000_0xb0000000 from broker 127.0.0.1:8081
2026-12-02T01:38:40.000Z [pulsar-load-manager-1-1] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - Writing local data to metadata store because maximum change 46.96724264380114% exceeded threshold 5%; time since last report written is 9.999 seconds
2026-12-02T01:38:41.800Z [pulsar-load-manager-1-1] WARN  o.a.p.b.l.i.OverloadShedder - HIGH USAGE WARNING : Sole namespace bundle lb/ns-a4/0x00000000_0xffffffff is overloading broker 127.0.0.1:8080. No Load Shedding will be done on this broker
\tat org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl.doLoadShedding(ModularLoadManagerImpl.java:660)
"""


def test_the_load_managers_lines_become_events_and_other_lines_none():
    rows, problems = parse_lb_events(REAL.splitlines(), "127.0.0.1:8080")
    assert problems == []
    got = [(r["line"], r["kind"], r["strategy"], r["bundle"], r["from_broker"], r["to_broker"]) for r in rows]
    assert got == [
        (1, "leader", None, None, None, "127.0.0.1:8080"),
        (2, "assignment", None, "lb/ns-a4/0x00000000_0xffffffff", None, None),  # a lookup's placement
        (3, "split-candidate", None, "lb/ns-b8/0x00000000_0xffffffff", None, None),
        (4, "split", None, "lb/ns-b8/0x00000000_0xffffffff", None, None),
        (6, "split-done", None, "lb/ns-b8/0x00000000_0xffffffff", None, None),  # not the admin line of 5
        (7, "split-failed", None, "lb/ns-b8/0x00000000_0xffffffff", None, None),
        (8, "shed-attempt", None, None, "127.0.0.1:8080", None),
        (9, "unload", "OverloadShedder", "lb/ns-c16/0x80000000_0x90000000", "127.0.0.1:8080", "127.0.0.1:8082"),
        (10, "unload-same-owner", "ThresholdShedder", "lb/ns-c16/0x90000000_0xa0000000", None, "127.0.0.1:8081"),
        (11, "unload-no-broker", "UniformLoadShedder", "lb/ns-c16/0xa0000000_0xb0000000", "127.0.0.1:8081", None),
        (12, "report-written", None, None, None, None),
        (13, "shed-sole-bundle", None, "lb/ns-a4/0x00000000_0xffffffff", "127.0.0.1:8080", None),
    ]
    unload = rows[7]
    assert unload["namespace"] == "lb/ns-c16" and unload["bundle_range"] == "0x80000000_0x90000000"
    assert unload["event_ts"].isoformat() == "2026-12-02T01:35:41.800000+00:00"
    assert rows[3]["detail"] == "true"  # the split unloads its children
    assert rows[1]["detail"] == "3"  # the brokers the placement considered


def test_a_recognised_line_with_a_bad_name_is_a_problem_naming_the_line_and_field():
    lines = ["2026-12-02T01:35:41.800Z [x] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - [OverloadShedder] Unloading "
             "bundle: lb/ns-c16/0x8_0x9 from broker 127.0.0.1:8080 to dest broker 127.0.0.1:8082",
             "2026-12-02T01:35:41.900Z [x] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - [OverloadShedder] Unloading "
             "bundle: lb/ns-c16/0x80000000_0x90000000 from broker 127.0.0.1:8080 to dest broker nowhere"]
    rows, problems = parse_lb_events(lines, "127.0.0.1:8080")
    assert rows == [] and [p.field for p in problems] == ["line 1: bundle", "line 2: to_broker"]


def test_a_log_file_lands_as_rows_of_its_broker_and_bad_lines_are_quarantined_by_line():
    path = "file:/landing/lbtest/2026-12-02T01-40-00Z/logs/127.0.0.1_8080.log"
    content = (REAL + "2026-12-02T01:39:00.000Z [x] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - Successfully split "
               "namespace bundle lb/ns/0xZZ_0x10\n").encode() + b"\xff\xfe not UTF-8\n"
    good, bad = parse_file(TABLES["lb_events"], path, content, manifests={path.rsplit("/logs/", 1)[0]: ["127.0.0.1:8080"]})
    assert len(good) == 12 and {r["broker"] for r in good} == {"127.0.0.1:8080"}
    assert {r["cluster"] for r in good} == {"lbtest"} and good[0]["snapshot_date"] == "2026-12-02"
    (q,) = bad
    assert q["field"] == "line 15: bundle" and q["bronze_table"] == "lb_events"


def test_a_configured_broker_that_is_not_running_keeps_its_failure_domain():
    """A stopped broker stays in its failure domain (configuration, not data about live brokers)."""
    path = "file:/landing/lbtest/2026-12-02T01-40-00Z/cluster/failure-domains.json"
    doc = {"zone-1": {"brokers": ["127.0.0.1:8080"]}, "zone-2": {"brokers": ["127.0.0.1:8081", "127.0.0.1:8082"]}}
    good, bad = parse_file(TABLES["failure_domains"], path, json.dumps(doc).encode(),
                           manifests={path.rsplit("/cluster/", 1)[0]: ["127.0.0.1:8080", "127.0.0.1:8081"]})
    assert bad == [] and sorted(r["broker"] for r in good) == ["127.0.0.1:8080", "127.0.0.1:8081", "127.0.0.1:8082"]


def test_the_last_lines_of_a_broker_stopped_since_the_snapshot_before_land():
    """A broker stopped between two snapshots logged its last lines (leadership lost, say): the next snapshot's
    manifest no longer lists it, and its log still lands."""
    path = "file:/landing/lbtest/2026-12-02T01-40-00Z/logs/127.0.0.1_8082.log"
    good, bad = parse_file(TABLES["lb_events"], path, REAL.encode(),
                           manifests={path.rsplit("/logs/", 1)[0]: ["127.0.0.1:8080", "127.0.0.1:8081"]})
    assert bad == [] and {r["broker"] for r in good} == {"127.0.0.1:8082"}


@pytest.mark.spark
def test_a_line_dated_where_its_snapshot_cannot_hold_it_is_quarantined_by_row_alike_at_ingest_and_by_validate_snapshot(
        spark):
    """A line dated in 9999 had landed (only a warning looked at it) and stopped the night's simulation: Arrow
    cannot hold its time in nanoseconds. A line before 1970, or more than 5 minutes after its snapshot, is quarantined
    by row (``logged_by_snapshot``); a minute ahead of the snapshot (a broker's clock) still lands, with its warning."""
    from lb_pipeline.ingest.tables import COMMON
    from lb_pipeline.quality import row_rules

    path = "file:/landing/lbtest/2026-12-02T01-40-00Z/logs/127.0.0.1_8080.log"
    unload = (" [x] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - [OverloadShedder] Unloading bundle: "
              "lb/ns-c16/0x80000000_0x90000000 from broker 127.0.0.1:8080 to dest broker 127.0.0.1:8082")
    times = ["2026-12-02T00:40:00.000Z", "2026-12-02T01:44:59.000Z", "2026-12-02T01:45:00.999Z",
             "2026-12-02T01:45:01.000Z", "9999-12-31T23:59:59.999Z", "0001-01-01T00:00:00.000Z"]
    content = "\n".join(t + unload for t in times).encode()
    rows, bad = parse_file(TABLES["lb_events"], path, content, manifests={path.rsplit("/logs/", 1)[0]: ["127.0.0.1:8080"]})
    assert bad == [] and len(rows) == 6
    python_kept, python_rejected = row_rules.check_rows("lb_events", rows)
    assert [r["line"] for r in python_kept] == [1, 2, 3]
    assert [(r["line"], field) for r, field, _ in python_rejected] == [(n, "logged_by_snapshot") for n in (4, 5, 6)]
    kept, rejected = row_rules.split("lb_events", spark.createDataFrame(rows, f"{COMMON}, {TABLES['lb_events'].schema}"))
    assert sorted(r.line for r in kept.collect()) == [1, 2, 3]
    assert sorted((json.loads(r.raw)["line"], r.field, r.reason) for r in rejected.collect()) == [
        (r["line"], "logged_by_snapshot", why) for r, _, why in python_rejected]
