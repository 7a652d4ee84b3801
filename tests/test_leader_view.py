"""The simulation's array-backed LoadData must read exactly as the JSON Pulsar's leader holds: same frame (orders,
sums, owned positions), same top-k bundles, same long-term broker rates."""

from __future__ import annotations

import numpy as np
import pytest
from tests.simulated import bundle_names, history_and_model

from lb_pipeline.algorithms import time_average as ta
from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.frame import build_frame
from lb_pipeline.algorithms.shedding.placement import long_term_rate
from lb_pipeline.algorithms.shedding import transfer_inputs
from lb_pipeline.algorithms.shedding.transfer_inputs import derive_from_modular, top_k_bundles
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.simulation.leader_view import BundleOrders, leader_load

BUNDLES = bundle_names(24, "t/a") + bundle_names(6, "t/b") + ["pulsar/c/broker-0:8080/0x00000000_0xffffffff"]


@pytest.fixture(scope="module")
def view():
    h, model = history_and_model(n_brokers=4, bundles=BUNDLES, snapshots=3, live=lambda s, b: b != 3,
                                 rate=lambda s, k: 100.0 + 37.0 * k, owner=lambda s, k: None if k == 5 else k % 3)
    rng = np.random.default_rng(7)
    averages = tuple(rng.uniform(0, 5000, (len(h.bundles), 4)) for _ in range(2))
    samples = (np.full(len(h.bundles), 10), np.full(len(h.bundles), ta.LONG_SAMPLES))
    owner = np.where(h.present[1], h.owner[1], -1)
    owner[owner == 1] = 3  # some bundles left on a broker that is down
    live = np.flatnonzero(h.live[1])
    traffic = h.traffic[1] * rng.uniform(0.5, 1.5, (len(h.bundles), 1))
    bt = np.stack([np.bincount(owner[owner >= 0], weights=traffic[owner >= 0, f], minlength=4) for f in range(4)], axis=1)
    usage = rng.uniform(0, 100, (4, 5))
    orders = BundleOrders(h.bundles, {b: n for n, b in enumerate(h.bundles)})
    load = leader_load(h, 1, live, owner, traffic, bt, usage, averages, samples, orders)
    plain = {b: {**r, "lastStats": {k: dict(v) for k, v in r["lastStats"].items()}} for b, r in load.brokers.items()}
    for r in plain.values():
        del r["timeAverageData"]  # the leader's own sums, which the JSON path computes from lastStats
    return load, LoadData(plain, {b: load.bundle_data[b] for b in load.bundle_data})


@pytest.mark.parametrize("skip_system", [False, True])
def test_the_frame_equals_the_one_built_from_the_json(view, skip_system):
    fast, plain = view[0].frame_builder(skip_system), build_frame(view[1].brokers, view[1].bundle_data, skip_system)
    assert fast.brokers == plain.brokers and fast.bundles == plain.bundles and fast.position == plain.position
    for name in ("percents", "rate_in", "rate_out", "tput_in", "tput_out", "bundle_count", "short_rate", "short_tput"):
        assert np.array_equal(getattr(fast, name), getattr(plain, name)), name
    assert [o.tolist() for o in fast.owned] == [o.tolist() for o in plain.owned]
    assert any(len(o) for o in fast.owned) and "broker-3:8080" not in fast.brokers


def test_bundle_data_and_stats_read_as_dicts(view):
    load, plain = view
    assert list(load.bundle_data) == list(plain.bundle_data) and BUNDLES[5] not in load.bundle_data
    assert load.bundle_data.get(BUNDLES[5]) is None and load.bundle_data.get("t/a/nowhere") is None
    for b, r in load.brokers.items():
        assert list(r["lastStats"]) == r["bundles"] == list(plain.brokers[b]["lastStats"])
        assert r["numTopics"] == sum(s["topics"] for s in plain.brokers[b]["lastStats"].values())


def test_top_k_bundles_from_arrays_equal_those_from_json(view):
    load, plain = view
    config = PulsarConfig().overridden(loadBalancerMaxNumberOfBundlesInBundleLoadReport="4")
    for b in load.brokers:
        fast = top_k_bundles(load.brokers[b]["lastStats"], 4, {"t/b"}, config)
        assert fast == top_k_bundles(plain.brokers[b]["lastStats"], 4, {"t/b"}, config)
        assert all(not t["bundleName"].startswith(("t/b", "pulsar/")) for t in fast)


def test_derived_top_bundles_are_selected_only_for_the_brokers_read(view, monkeypatch):
    load, plain = view
    config = PulsarConfig().overridden(loadBalancerMaxNumberOfBundlesInBundleLoadReport="4")
    selected = []
    real = transfer_inputs.top_k_bundles
    monkeypatch.setattr(transfer_inputs, "top_k_bundles", lambda stats, *a: selected.append(stats) or real(stats, *a))
    fast = derive_from_modular(load.brokers, config, 1_000, groups={"t/b": "g"})
    eager = derive_from_modular(plain.brokers, config, 1_000, groups={"t/b": "g"})
    first = next(iter(load.brokers))
    assert fast.brokers == eager.brokers and not selected  # BrokerLoadData (numTopics included) from the views alike
    assert fast.top_bundles.get(first) == real(plain.brokers[first]["lastStats"], 4, {"t/b"}, config)
    assert len(selected) == 1 and fast.top_bundles.get(first) is fast.top_bundles[first] and len(selected) == 1
    assert dict(fast.top_bundles) == dict(eager.top_bundles) and fast.top_bundles.get("nobody") is None


def test_the_leaders_broker_averages_equal_the_walk_over_its_bundles(view):
    load, plain = view
    for b in load.brokers:
        assert long_term_rate(load, b) == long_term_rate(plain, b)
