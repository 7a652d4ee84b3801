"""Broker loss sized bundle by bundle on demand (``planning.bundle_loss``): a pegged broker's demand is above its
report, a topic is never cut, and the brokers to add are found by placing the pieces, not by dividing the load."""

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import functions as F

from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.planning import bundle_loss
from lb_pipeline.planning.headroom import losses
from lb_pipeline.transforms import capacity

COST = 0.01  # CPU units (percent of a core) per msg/s
IDLE = 20.0


def _night(hot_topics: int = 1) -> tuple[list[dict], list[dict], list[dict]]:
    """Four 4-core brokers (400 CPU units each). broker-0 serves a hot bundle of 36,000 msg/s (in ``hot_topics``
    topics, one of them half of it when several) and one of 10,000: its demand is 20 + 460 = 480 units, it reports
    400 (pegged). brokers 1-3 serve 28,000 msg/s each: 300 units, reported as such."""
    brokers = [{"broker": "broker-0", "usage": 400.0}] + [{"broker": f"broker-{i}", "usage": 300.0} for i in (1, 2, 3)]
    share = 1.0 if hot_topics == 1 else 0.5
    bundles = [{"owner_broker": "broker-0", "bundle": "t/hot/0x00000000_0x10000000", "rate": 36_000.0,
                "topics": hot_topics, "hottest_topic_share": share},
               {"owner_broker": "broker-0", "bundle": "t/warm/0x00000000_0x10000000", "rate": 10_000.0, "topics": 4,
                "hottest_topic_share": 0.25}]
    bundles += [{"owner_broker": f"broker-{i}", "bundle": f"t/n{i}/0x{k:08x}_0x{k + 1:08x}", "rate": 7_000.0,
                 "topics": 3, "hottest_topic_share": 0.4} for i in (1, 2, 3) for k in range(4)]
    models = [{"broker": f"broker-{i}", "resource": r, "intercept": IDLE if r == "cpu" else 0.0,
               "coef_rate": COST if r == "cpu" else 0.0, "coef_tput_in": 0.0, "coef_tput_out": 0.0,
               "residual_std": 8.0}
              for i in range(4) for r in ("cpu", "memory", "direct_memory", "bandwidth_in", "bandwidth_out")]
    return brokers, bundles, models


def _cluster(hot_topics: int = 1) -> bundle_loss.Cluster:
    brokers, bundles, _ = _night(hot_topics)
    names = [b["broker"] for b in brokers]
    cost = np.array([b["rate"] * COST for b in bundles])
    owner = np.array([names.index(b["owner_broker"]) for b in bundles])
    idle = np.full(4, IDLE)
    return bundle_loss.Cluster(names, np.full(4, 400.0), np.array([b["usage"] for b in brokers]), idle,
                               idle + np.bincount(owner, weights=cost, minlength=4), [b["bundle"] for b in bundles],
                               owner, cost, np.array([b["hottest_topic_share"] for b in bundles]),
                               np.array([b["topics"] for b in bundles], float))


def test_a_pegged_brokers_demand_is_its_traffics_and_losing_it_asks_for_more_brokers_than_an_even_spread():
    c = _cluster(hot_topics=40)
    lost = np.array([True, False, False, False])
    fluid = losses(c.brokers, [None] * 4, c.usage, c.limit, 85.0)[0]
    assert fluid.lost == ["broker-0"] and fluid.brokers_to_add == 1  # 1,300 reported units on 1,200: one more
    got = bundle_loss.survive(c, lost, 85.0)
    assert got.estimated == ["broker-0"]  # its report sat at its limit
    # demand 3 × 20 idle + 460 + 3 × 280 = 1,360 units on 1,200: 113 %; under 85 % takes two more 4-core brokers
    assert got.even_after == pytest.approx(100 * 1360 / 1200)
    assert got.usage_after >= got.even_after and got.brokers_to_add == 2 and got.too_big == []


def test_a_topic_bigger_than_a_broker_can_carry_is_named_and_no_number_of_brokers_is_claimed():
    c = _cluster(hot_topics=1)  # the 36,000 msg/s bundle is one topic: 360 units, more than 85 % of 400 less idle
    got = bundle_loss.survive(c, np.array([True, False, False, False]), 85.0)
    assert got.brokers_to_add is None
    assert [b for b, _ in got.too_big] == ["t/hot/0x00000000_0x10000000"] and got.too_big[0][1] == pytest.approx(90.0)
    # the whole cluster's load is repacked at best, and still a survivor carries the topic whole: above 100 %
    assert got.usage_after >= got.even_after > 100 and got.usage_after >= 100 * (IDLE + 360) / 400


def test_a_bundle_splits_into_its_hottest_topic_and_the_rest_in_smaller_pieces():
    c = bundle_loss.Cluster(["a"], np.array([100.0]), np.array([0.0]), np.array([0.0]), np.array([0.0]),
                            ["t/n/x", "t/n/y", "t/n/z"], np.array([0, 0, 0]), np.array([10.0, 8.0, 0.0]),
                            np.array([0.4, 1.0, 0.5]), np.array([5.0, 1.0, 3.0]))
    assert bundle_loss.pieces(c).tolist() == pytest.approx([8.0, 4.0, 1.5, 1.5, 1.5, 1.5])


def test_small_pieces_fill_the_least_used_brokers_up_to_one_level():
    base, limit = np.array([0.0, 50.0]), np.array([100.0, 100.0])
    assert bundle_loss.pack(base, limit, np.array([30.0]), 100.0).tolist() == pytest.approx([0.3, 0.5])
    assert bundle_loss.pack(base, limit, np.array([70.0]), 100.0).tolist() == pytest.approx([0.6, 0.6])
    # a large piece goes whole where it leaves the lower usage: on the larger broker
    assert bundle_loss.pack(np.zeros(2), np.array([100.0, 400.0]), np.array([90.0]), 10.0).tolist() == \
        pytest.approx([0.0, 0.225])


def test_the_capacity_table_sizes_losses_on_the_nights_bundles_and_load_model(spark):
    brokers, bundles, models = _night(hot_topics=40)
    ts = pd.Timestamp("2026-01-15 12:00:00")
    broker_rows = pd.DataFrame([{"cluster": "c", "snapshot_ts": ts, "snapshot_date": "2026-01-15", "broker": b["broker"],
                                 "max_usage": b["usage"] / 4, "domain": None,
                                 **{p: (b["usage"] / 4 if r == "cpu" else 10.0) for r, (p, _) in capacity.RESOURCES.items()},
                                 **{lim: 400.0 for _, lim in capacity.RESOURCES.values()}} for b in brokers])
    bundle_rows = pd.DataFrame([{"cluster": "c", "snapshot_ts": ts, "snapshot_date": "2026-01-15",
                                 "owner_broker": b["owner_broker"], "bundle": b["bundle"], "msg_rate_in": b["rate"] / 2,
                                 "msg_rate_out": b["rate"] / 2, "msg_throughput_in": 0.0, "msg_throughput_out": 0.0,
                                 "topics": b["topics"], "hottest_topic_share": b["hottest_topic_share"]} for b in bundles])
    model_rows = pd.DataFrame([{"cluster": "c", "snapshot_date": "2026-01-15", **m} for m in models])
    inputs = spark.createDataFrame(broker_rows).withColumn("domain", F.col("domain").cast("string"))
    ns = spark.createDataFrame([("c", "t/a", "2026-01-15", 8)],
                               "cluster string, namespace string, snapshot_date string, num_bundles int")
    out = capacity.capacity_forecast(inputs, ns, "2026-01-15", PulsarConfig(), spark.createDataFrame(bundle_rows),
                                     spark.createDataFrame(model_rows)).toPandas()
    cpu = out[(out.scope == "loss") & (out.resource == "cpu")].iloc[0]
    assert cpu.method == "bundles on demand" and list(cpu.lost_brokers) == ["broker-0"]
    assert cpu.brokers_to_add == 2 and cpu.usage_after_loss > 100 * 1360 / 1200 - 1e-6
    assert "broker-0 is the load model's on its traffic" in cpu.note and "113.3 %" in cpu.note
    assert "typically 2.0 points off a broker's report" in cpu.note  # 8 units of a 400-unit broker
    fluid = capacity.capacity_forecast(inputs, ns, "2026-01-15", PulsarConfig()).toPandas()
    cpu = fluid[(fluid.scope == "loss") & (fluid.resource == "cpu")].iloc[0]
    assert cpu.method == "survivors' capacity" and cpu.brokers_to_add == 1  # the even spread of reported usage


def test_a_topic_too_big_for_a_typical_broker_is_carried_by_a_larger_survivor():
    c = _cluster(hot_topics=1)
    c = bundle_loss.Cluster(c.brokers, np.array([400.0, 1600.0, 400.0, 400.0]), c.usage, c.idle, c.modelled,
                            c.bundles, c.owner, c.cost, c.hottest, c.topics)
    got = bundle_loss.survive(c, np.array([True, False, False, False]), 85.0)
    assert got.too_big == [] and got.brokers_to_add == 0  # 1,360 units on 2,400: the 16-core broker takes the topic
    assert got.usage_after <= 85.0


def test_a_survivor_hot_outside_its_bundles_is_the_reason_no_number_of_brokers_is_enough_and_the_search_ends():
    c = _cluster(hot_topics=40)
    usage = c.usage.copy()
    usage[1] = 390.0  # broker-1 reports 390 of 400 while its bundles cost 280: 90 units of its own beside idle
    cost = c.cost.copy()
    cost[0] = 50.0  # no topic too big for 25 % of a broker
    c = bundle_loss.Cluster(c.brokers, c.limit, usage, c.idle, c.modelled, c.bundles, c.owner, cost, c.hottest,
                            c.topics)
    got = bundle_loss.survive(c, np.array([True, False, False, False]), 25.0)  # 100 units a broker; broker-1 keeps 110
    assert got.brokers_to_add is None and got.too_big == []
    assert got.why.startswith("broker-1 carries more than the threshold outside its bundles")


def test_the_reason_a_topic_is_too_big_names_it():
    got = bundle_loss.survive(_cluster(hot_topics=1), np.array([True, False, False, False]), 85.0)
    assert got.why == ("the hottest topic of t/hot/0x00000000_0x10000000 alone needs 90 % of one (partition the topic, "
                       "or a larger broker)")
