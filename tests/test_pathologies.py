"""Every pathology detector on a scripted history where it must fire, and on one where it must not."""

import json
from datetime import datetime, timedelta

from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.transforms import pathologies as p
from lb_pipeline.transforms import pathologies_cluster as pc

DAY = "2026-01-15"
T0 = datetime(2026, 1, 15, 0, 0)
CONFIG = PulsarConfig(profile="pulsar-4.0")
USAGE = ("cluster string, snapshot_ts timestamp, snapshot_date string, broker string, max_usage double, "
         "weighted_max_usage double, num_bundles int, msg_rate_in double, msg_rate_out double, cpu_pct double, "
         "memory_pct double, direct_memory_pct double, bandwidth_in_pct double, bandwidth_out_pct double")
REPORTS = ("cluster string, snapshot_ts timestamp, snapshot_date string, broker string, start_timestamp_ms long, "
           "broker_version string")


def _t(i: int) -> datetime:
    return T0 + timedelta(hours=i)


def _usage(spark, rows):
    """rows: (snapshot, broker, max usage, bundles) plus optional overrides of the percent columns."""
    out = []
    for row in rows:
        i, broker, u, bundles, *extra = row
        pct = {"cpu_pct": u * 100, "memory_pct": 40.0, "direct_memory_pct": 10.0, "bandwidth_in_pct": u * 50,
               "bandwidth_out_pct": u * 60, **(extra[0] if extra else {})}
        out.append(("c", _t(i), DAY, broker, u, u, bundles, 100.0 if bundles else 0.0, 100.0 if bundles else 0.0,
                    pct["cpu_pct"], pct["memory_pct"], pct["direct_memory_pct"], pct["bandwidth_in_pct"],
                    pct["bandwidth_out_pct"]))
    return spark.createDataFrame(out, USAGE)


def _reports(spark, brokers, snapshots=3, versions=None):
    return spark.createDataFrame([("c", _t(i), DAY, b, 0, (versions or {}).get(b, "4.0.8"))
                                  for i in range(snapshots) for b in brokers], REPORTS)


def _rows(df):
    return [r.asDict() for r in df.collect()]


def test_an_empty_broker_beside_hot_ones_is_found_and_a_calm_cluster_is_not(spark):
    hot = _usage(spark, [(i, b, u, n) for i in range(3) for b, u, n in
                         [("b0", 0.80, 10), ("b1", 0.60, 10), ("b2", 0.55, 10), ("new", 0.01, 0)]])
    found = _rows(p.idle_brokers(hot, _reports(spark, ["b0", "b1", "b2", "new"]), CONFIG))
    assert [(f["subject"], f["snapshots"], f["severity"]) for f in found] == [("new", 3, "warning")]
    assert "b0" in found[0]["summary"] and len(json.loads(found[0]["evidence"])) == 3
    calm = _usage(spark, [(i, b, u, 10) for i in range(3) for b, u in [("b0", 0.5), ("b1", 0.48), ("b2", 0.52)]])
    assert _rows(p.idle_brokers(calm, _reports(spark, ["b0", "b1", "b2"]), CONFIG)) == []
    once = _usage(spark, [(0, "b0", 0.8, 10), (0, "b1", 0.5, 10), (0, "new", 0.0, 0)])
    assert _rows(p.idle_brokers(once, _reports(spark, ["b0", "b1", "new"], 1), CONFIG)) == []  # one snapshot: noise


STATS = ("cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, owner_broker string, "
         "hottest_topic string, hottest_topic_share double, msg_rate_in double, msg_rate_out double, "
         "msg_throughput_in double, msg_throughput_out double")


def test_a_hot_bundle_of_one_topic_is_unsplittable_and_a_hot_bundle_of_many_is_not(spark):
    one = spark.createDataFrame([("c", _t(0), DAY, "t/ns/0x0_0x1", "b0", "persistent://t/ns/hot", 0.97, 26000.0,
                                  9000.0, 1e6, 1e6)], STATS)
    found = _rows(p.unsplittable_bundles(one, CONFIG))
    assert [f["subject"] for f in found] == ["t/ns/0x0_0x1"]
    assert "to a new partitioned topic" in found[0]["action"] and "update-partitioned-topic" not in found[0]["action"]
    partition = spark.createDataFrame([("c", _t(0), DAY, "t/ns/0x0_0x1", "b0", "persistent://t/ns/hot-partition-3",
                                        0.97, 26000.0, 9000.0, 1e6, 1e6)], STATS)
    (advice,) = [f["action"] for f in _rows(p.unsplittable_bundles(partition, CONFIG))]
    assert advice.startswith("Give persistent://t/ns/hot more partitions (topics update-partitioned-topic")
    many = spark.createDataFrame([("c", _t(0), DAY, "t/ns/0x0_0x1", "b0", "persistent://t/ns/a", 0.2, 26000.0,
                                   9000.0, 1e6, 1e6),
                                  ("c", _t(0), DAY, "t/ns/0x1_0x2", "b0", "persistent://t/ns/b", 1.0, 100.0, 100.0,
                                   1e3, 1e3)], STATS)
    assert _rows(p.unsplittable_bundles(many, CONFIG)) == []


def test_a_nic_above_100_percent_and_a_cpu_stuck_at_zero_are_found(spark):
    bad = _usage(spark, [(i, "b0", 0.5, 5, {"bandwidth_out_pct": 180.0}) for i in range(2)]
                 + [(i, "b1", 0.5, 5, {"cpu_pct": 0.0}) for i in range(3)])
    found = {(f["detector"], f["subject"]): f for f in _rows(p.broken_usage(bad))}
    assert set(found) == {("usage above 100 %", "b0 bandwidth_out"), ("usage stuck at 0 %", "b1 cpu")}
    assert "loadBalancerOverrideBrokerNicSpeedGbps" in found[("usage above 100 %", "b0 bandwidth_out")]["action"]
    assert found[("usage above 100 %", "b0 bandwidth_out")]["severity"] == "critical"
    fine = _usage(spark, [(i, b, 0.5, 5) for i in range(3) for b in ("b0", "b1")]
                  + [(i, "idle", 0.0, 0, {"cpu_pct": 0.0}) for i in range(3)])  # 0 % with no traffic is truthful
    assert _rows(p.broken_usage(fine)) == []


def test_heap_overload_the_strategies_cannot_see_is_found(spark):
    heap = _usage(spark, [(0, "b0", 0.4, 5, {"memory_pct": 96.0}), (1, "b0", 0.4, 5, {"memory_pct": 90.0})])
    found = _rows(p.ignored_resources(heap, CONFIG))
    assert [(f["subject"], f["snapshots"], f["severity"]) for f in found] == [("b0 memory", 2, "warning")]
    assert "loadBalancerMemoryResourceWeight" in found[0]["action"]
    seen = _usage(spark, [(0, "b0", 0.9, 5, {"memory_pct": 96.0})])  # the weighted usage is over the threshold too
    assert _rows(p.ignored_resources(seen, CONFIG)) == []
    weighted = PulsarConfig({"loadBalancerMemoryResourceWeight": "1.0"}, profile="pulsar-4.0")
    assert _rows(p.ignored_resources(heap, weighted)) == []


OWNERSHIP = "cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, broker string"


def test_a_bundle_moved_away_and_back_is_ping_pong_and_a_single_move_is_not(spark):
    own = spark.createDataFrame([("c", _t(i), DAY, "t/ns/a", o) for i, o in enumerate(["b0", "b1", "b0", "b1", "b0"])]
                                + [("c", _t(i), DAY, "t/ns/b", o) for i, o in enumerate(["b0", "b0", "b2", "b2", "b2"])],
                                OWNERSHIP)
    found = _rows(pc.ping_pong(own))
    assert [f["subject"] for f in found] == ["t/ns/a"] and found[0]["severity"] == "warning"
    assert found[0]["summary"].startswith("moved 4 time(s), 3 of them back")  # each move once, not each pair
    pairs = spark.createDataFrame([("c", _t(i), DAY, "t/ns/a", "b0" if i % 2 == 0 else "b1") for i in range(15)], OWNERSHIP)
    (many,) = _rows(pc.ping_pong(pairs))
    assert many["summary"].startswith("moved 14 time(s), 13 of them back")  # 14 moves read 30 round trips before
    slow = spark.createDataFrame([("c", _t(i), DAY, "t/ns/a", o) for i, o in
                                  enumerate(["b0", "b1"] + ["b1"] * 8 + ["b0"])], OWNERSHIP)
    assert _rows(pc.ping_pong(slow)) == []  # back after ten snapshots: not ping-pong


LAYOUTS = ("cluster string, snapshot_ts timestamp, snapshot_date string, namespace string, num_bundles int, "
           "boundaries array<string>")
SNAPSHOTS = "cluster string, snapshot_ts timestamp, snapshot_date string, brokers array<string>"


def _even(n: int) -> list[str]:
    return [f"0x{min(k * (0x100000000 // n), 0xffffffff):08x}" for k in range(n)] + ["0xffffffff"]


def test_a_namespace_with_fewer_bundles_than_brokers_is_found_at_the_last_snapshot(spark):
    snaps = spark.createDataFrame([("c", _t(0), DAY, ["b0", "b1", "b2"]), ("c", _t(1), DAY, ["b0", "b1", "b2", "b3"])],
                                  SNAPSHOTS)
    layouts = spark.createDataFrame([("c", _t(i), DAY, ns, n, b) for i in range(2) for ns, n, b in
                                     [("t/small", 2, ["0x00000000", "0x40000000", "0xffffffff"]), ("t/big", 16, _even(16)),
                                      ("t/edge", 4 - (1 - i), _even(4 - (1 - i))), ("pulsar/system", 1, _even(1)),
                                      ("pulsar/c/b0:8080", 1, _even(1)), ("pulsar/b0:8080", 1, _even(1))]], LAYOUTS)
    found = _rows(pc.few_bundles(layouts, snaps))  # Pulsar's own namespaces have one bundle by design
    assert [f["subject"] for f in found] == ["t/small"]
    # the command runs as printed: the widest bundle named, the namespace last (pulsar-admin's grammar)
    assert "`pulsar-admin namespaces split-bundle --bundle 0x40000000_0xffffffff --unload t/small`" in found[0]["action"]
    odd = spark.createDataFrame([("c", _t(1), DAY, "t/it's", 1, _even(1))], LAYOUTS)
    (quoted,) = _rows(pc.few_bundles(odd, snaps))
    assert "--bundle 0x00000000_0xffffffff --unload 't/it'\"'\"'s'`" in quoted["action"]


DOMAINS = "cluster string, snapshot_ts timestamp, snapshot_date string, domain string, broker string"


def test_failure_domains_of_very_different_size_are_found_and_even_ones_are_not(spark):
    usage = _usage(spark, [(i, f"b{k}", 0.5, 5) for i in range(2) for k in range(6)])
    uneven = spark.createDataFrame([("c", _t(i), DAY, "a" if k < 4 else "b", f"b{k}") for i in range(2)
                                    for k in range(6)], DOMAINS)
    found = _rows(pc.unbalanced_domains(uneven, usage))
    assert [f["subject"] for f in found] == ["c"] and '"a":4' in found[0]["summary"]
    even = spark.createDataFrame([("c", _t(i), DAY, "a" if k < 3 else "b", f"b{k}") for i in range(2)
                                  for k in range(6)], DOMAINS)
    assert _rows(pc.unbalanced_domains(even, usage)) == []


def test_brokers_on_two_versions_are_found_and_one_version_is_not(spark):
    mixed = _reports(spark, ["b0", "b1"], 2, {"b1": "3.3.2"})
    found = _rows(pc.mixed_versions(mixed))
    assert [(f["subject"], f["snapshots"]) for f in found] == [("c", 2)] and "3.3.2" in found[0]["summary"]
    assert _rows(pc.mixed_versions(_reports(spark, ["b0", "b1"]))) == []



def test_shedding_configured_but_idle_while_a_broker_runs_above_its_threshold_is_a_finding(spark):
    """The issue's recorded day: ThresholdShedder configured, broker-3 above 85 % in 23 of 24 snapshots, no unload
    all day: it was no finding. One move in the night, shedding switched off, or a broker hot in a few snapshots
    only is not this finding."""
    hot = _usage(spark, [(i, b, u, 4) for i in range(24) for b, u in
                         [("b1", 0.50), ("b2", 0.55), ("b3", 0.80 if i == 5 else 0.96)]])
    still = spark.createDataFrame([("c", _t(i), DAY, f"t/ns/{k}", f"b{k % 3 + 1}") for i in range(24) for k in range(6)],
                                  OWNERSHIP)
    (found,) = _rows(p.idle_shedding(hot, still, CONFIG))
    assert (found["subject"], found["severity"], found["snapshots"]) == ("b3", "critical", 23)
    assert found["summary"] == ("ThresholdShedder configured, yet no bundle changed owner all night while this broker "
                                "was above 85 % in 23 of 24 snapshots (mean 96 %)")
    moved = still.union(spark.createDataFrame([("c", _t(24), DAY, "t/ns/0", "b2")], OWNERSHIP))
    assert _rows(p.idle_shedding(hot, moved, CONFIG)) == []
    off = PulsarConfig({"loadBalancerSheddingEnabled": "false"}, profile="pulsar-4.0")
    assert _rows(p.idle_shedding(hot, still, off)) == []
    brief = _usage(spark, [(i, b, u, 4) for i in range(24) for b, u in [("b1", 0.5), ("b3", 0.96 if i < 8 else 0.6)]])
    assert _rows(p.idle_shedding(brief, still, CONFIG)) == []  # 8 of 24: under half the night


def test_the_gold_suite_knows_every_detector():
    """A detector the suite's value set lacks fails ``gold.pathologies`` as critical the first night it fires."""
    import inspect
    import re
    from pathlib import Path

    names = set()
    for module in (p, pc):
        names |= set(re.findall(r'"([a-z][a-zA-Z0-9 %-]+)",\s*(?:F\.col|F\.concat_ws|F\.lit)\(', inspect.getsource(module)))
    suite = json.loads((Path(__file__).parents[1] / "expectations" / "gold.pathologies.json").read_text())
    (allowed,) = [e["kwargs"]["value_set"] for e in suite["expectations"] if e["kwargs"].get("column") == "detector"]
    assert len(names) >= 10 and names <= set(allowed), names - set(allowed)


OWNED = ("cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, owner_broker string, "
         "msg_rate_in double, msg_rate_out double")


def test_a_zeroed_load_report_beside_owned_busy_bundles_is_a_broken_reporter_and_not_an_idle_broker(spark):
    """The issue's case: broker-2's report zeroed while its ownership still lists 9 bundles and their topics carry
    traffic. Its look-alike, a broker restarted empty (owning nothing), stays an idle broker and no broken reporter."""
    brokers = ["b0", "b1", "b2", "fresh"]
    usage = _usage(spark, [(i, b, u, n) for i in range(3) for b, u, n in
                           [("b0", 0.90, 10), ("b1", 0.70, 10), ("b2", 0.0, 0), ("fresh", 0.01, 0)]])
    owned = spark.createDataFrame([("c", _t(i), DAY, f"t/ns/{b}-{k}", b, 10.0, 10.0) for i in range(3)
                                   for b, n in [("b0", 10), ("b1", 10), ("b2", 9)] for k in range(n)], OWNED)
    load = p.owned_load(owned)
    broken = _rows(p.broken_reporter(usage, load))
    assert [(f["subject"], f["severity"], f["snapshots"]) for f in broken] == [("b2", "critical", 3)]
    assert "lists 0 bundles and 0 msg/s; ownership gives it 9 bundles whose topics carry 180 msg/s" in broken[0]["summary"]
    assert "not an idle broker" in broken[0]["action"]
    idle = _rows(p.idle_brokers(usage, _reports(spark, brokers), CONFIG, load))
    assert [f["subject"] for f in idle] == ["fresh"]
    assert sorted(f["subject"] for f in _rows(p.idle_brokers(usage, _reports(spark, brokers), CONFIG))) == ["b2", "fresh"]
    # a report a moment behind a bundle that just arrived: one snapshot only, no finding
    late = _usage(spark, [(0, "b3", 0.0, 0)])
    arrived = p.owned_load(spark.createDataFrame([("c", _t(0), DAY, "t/ns/x", "b3", 50.0, 50.0)], OWNED))
    assert _rows(p.broken_reporter(late, arrived)) == []


def test_a_namespace_at_or_over_its_clusters_bundle_cap_is_found_and_one_below_a_higher_cap_is_not(spark):
    layouts = spark.createDataFrame([("c", _t(i), DAY, ns, n, _even(n)) for i in range(2) for ns, n in
                                     [("hooli/telemetry", 10), ("acme/orders", 16), ("globex/billing", 17),
                                      ("t/calm", 4), ("pulsar/system", 1)]], LAYOUTS)
    capped = CONFIG.overridden(loadBalancerNamespaceMaximumBundles="10")
    found = {f["subject"]: f for f in _rows(pc.bundle_cap(layouts, capped))}
    assert sorted(found) == ["acme/orders", "globex/billing", "hooli/telemetry"]
    assert found["hooli/telemetry"]["summary"].startswith("10 bundles, at loadBalancerNamespaceMaximumBundles=10")
    assert found["acme/orders"]["summary"].startswith("16 bundles, over loadBalancerNamespaceMaximumBundles=10")
    assert found["acme/orders"]["snapshots"] == 1  # the night's last layout decides
    assert _rows(pc.bundle_cap(layouts, CONFIG)) == []  # the default cap, 128: the same namespaces are no finding


BRONZE_OWNERSHIP = ("cluster string, snapshot_ts timestamp, snapshot_date string, broker string, bundle string, "
             "namespace string, bundle_range string, assignment string, is_active boolean")
BRONZE_NAMESPACES = ("cluster string, snapshot_ts timestamp, snapshot_date string, namespace string, boundaries array<string>, "
              "num_bundles int, anti_affinity_group string")


def _aa_night(spark, owners: list[dict[str, str]], brokers: list[list[str]]):
    """Per snapshot: bundle → owner, and the live brokers; namespaces t/a, t/b, t/c in group g."""
    from lb_pipeline.transforms.anti_affinity import anti_affinity_audit

    own = spark.createDataFrame([("c", _t(i), DAY, b, bundle, bundle.rsplit("/", 1)[0], bundle.rsplit("/", 1)[1], None, True)
                                 for i, o in enumerate(owners) for bundle, b in o.items()], BRONZE_OWNERSHIP)
    ns = spark.createDataFrame([("c", _t(i), DAY, n, ["0x00000000", "0xffffffff"], 1, "g")
                                for i in range(len(owners)) for n in ("t/a", "t/b", "t/c")], BRONZE_NAMESPACES)
    snaps = spark.createDataFrame([("c", _t(i), DAY, b) for i, b in enumerate(brokers)], SNAPSHOTS)
    domains = spark.createDataFrame([], "cluster string, snapshot_ts timestamp, snapshot_date string, domain string, "
                                        "broker string")
    return anti_affinity_audit(own, ns, domains, snaps)


def test_a_group_bundle_moved_where_pulsar_would_not_place_it_is_a_finding_and_a_forced_one_is_not(spark):
    start = {"t/a/0x00000000_0xffffffff": "b1", "t/b/0x00000000_0xffffffff": "b2", "t/c/0x00000000_0xffffffff": "b3"}
    moved = {**start, "t/b/0x00000000_0xffffffff": "b1"}  # beside t/a while b4 holds none of the group
    audit = _aa_night(spark, [start, moved], [["b1", "b2", "b3", "b4"]] * 2)
    (row,) = _rows(audit.where("scope = 'placement'"))
    assert (row["place"], row["namespaces"], row["namespace_count"], row["least_count"]) == ("b1", ["t/b"], 1, 0)
    assert "moved from b2 to b1" in row["message"] and "keeps b2, b4" in row["message"]
    (found,) = _rows(pc.anti_affinity_placements(audit))
    assert (found["detector"], found["subject"], found["severity"]) == (
        "anti-affinity placement Pulsar would not make", "g", "warning")
    assert "t/b/0x00000000_0xffffffff" in found["summary"] and "by hand" in found["action"]

    # b2 left and every broker still up holds one namespace of the group: beside another is where Pulsar puts it
    forced = _aa_night(spark, [start, moved], [["b1", "b2", "b3"], ["b1", "b3"]])
    assert _rows(forced.where("scope = 'placement'")) == [] and _rows(pc.anti_affinity_placements(forced)) == []

