"""The idle-broker finding beside a broker whose load is one topic's bundle: its advice agrees with the report's
actions whether they move that bundle or withhold the move."""

from lb_pipeline.transforms import pathologies as p
from tests.test_pathologies import CONFIG, DAY, STATS, _reports, _rows, _t, _usage


def test_an_idle_broker_beside_one_pinned_by_a_one_topic_bundle_is_told_what_moving_that_bundle_does(spark):
    """The multi-night demo: broker-3 at 100 % carries hooli/telemetry's one-topic bundle (nearly all its traffic),
    broker-2 idles at 7 %. The report withheld the move of that bundle (it would take broker-2 to 119 %), while the
    idle-broker finding said to unload the hottest broker's bundles. Now the finding names the bundle, says when the
    report moves it (the next night it did, to 94 %) and to fill the idle broker from the other brokers; where the
    hottest broker's load is many topics, the action is unchanged."""
    usage = _usage(spark, [(i, b, u, n) for i in range(3) for b, u, n in
                           [("b3", 1.0, 3), ("b1", 0.45, 6), ("b0", 0.40, 6), ("b2", 0.07, 5)]])
    stats = spark.createDataFrame(
        [("c", _t(i), DAY, bundle, owner, topic, share, rate, rate, 0.0, 0.0) for i in range(3) for
         bundle, owner, topic, share, rate in
         [("hooli/telemetry/0xe0000000_0xe7ffffff", "b3", "persistent://hooli/telemetry/ledger-32", 1.0, 60_000.0),
          ("acme/orders/0x00000000_0x40000000", "b3", "persistent://acme/orders/o-1", 0.2, 2_000.0),
          ("acme/orders/0x40000000_0x80000000", "b1", "persistent://acme/orders/o-7", 0.3, 9_000.0)]], STATS)
    (found,) = _rows(p.idle_brokers(usage, _reports(spark, ["b0", "b1", "b2", "b3"]), CONFIG,
                                    pinning=p.pinning_bundles(stats)))
    assert found["subject"] == "b2" and found["severity"] == "critical"
    assert found["action"].startswith("Most of b3's traffic is hooli/telemetry/0xe0000000_0xe7ffffff, one topic's "
                                      "bundle: whichever broker holds it carries all of that load")
    assert "the report's actions move it only where that lowers the hottest broker's usage" in found["action"]
    assert "unload the hottest broker's bundles" not in found["action"]
    spread = stats.withColumn("hottest_topic_share", stats.hottest_topic_share * 0.5)  # many topics: it can split
    (plain,) = _rows(p.idle_brokers(usage, _reports(spark, ["b0", "b1", "b2", "b3"]), CONFIG,
                                    pinning=p.pinning_bundles(spread)))
    assert plain["action"].startswith("Move load to it: unload the hottest broker's bundles (the report's actions)")
