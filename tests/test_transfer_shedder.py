"""TransferShedder (extensible load manager): trigger, hit count, cool-down, transfer vs unload, guards."""

import pytest

from lb_pipeline.algorithms.shedding.transfer_inputs import ExtensibleLoad, derive_from_modular
from lb_pipeline.algorithms.shedding.transfer_shedder import TransferShedder
from lb_pipeline.model.config import PulsarConfig

NOW = 10_000_000
MB = 1_000_000.0
NO_DEBOUNCE = PulsarConfig({"loadBalancerSheddingConditionHitCountThreshold": "0"})


def bld(load, tp, updated=NOW):
    return {"weightedMaxEMA": load, "msgThroughputEMA": tp, "msgThroughputIn": tp, "msgThroughputOut": 0.0,
            "updatedAt": updated}


def tops(broker, sizes):
    return [{"bundleName": f"t/{broker.split(':')[0]}/0x{i:08x}_0x{i + 1:08x}",
             "stats": {"msgThroughputIn": s, "msgThroughputOut": 0.0}}
            for i, s in enumerate(sorted(sizes))]


def cluster(loads, sizes=None):
    brokers = {b: bld(l, 100 * MB * l) for b, l in loads.items()}
    top = {b: tops(b, (sizes or {}).get(b, [5 * MB, 10 * MB, 20 * MB])) for b in loads}
    return ExtensibleLoad(brokers, top, list(loads))


def test_overloaded_cluster_transfers_from_max_to_min_with_destination():
    load = cluster({"a:8080": 0.9, "b:8080": 0.2, "c:8080": 0.1})
    result = TransferShedder().find_bundles_for_unloading(load, NO_DEBOUNCE, NOW)
    assert result.unloads
    assert {(u.broker, u.destination) for u in result.unloads} == {("a:8080", "c:8080")}
    # target = 90 MB/s x (0.9 - 0.1)/2 / 0.9 = 40 MB/s: 5 + 10 + 20 = 35 fit, one bundle is always left
    assert result.unloads[0].amount == pytest.approx(40 * MB)
    assert "std after" in result.notes[-1]


def test_balanced_cluster_does_nothing_and_resets_the_hit_count():
    shedder = TransferShedder(hit_count=2)
    result = shedder.find_bundles_for_unloading(cluster({"a:8080": 0.5, "b:8080": 0.45, "c:8080": 0.4}), PulsarConfig(), NOW)
    assert not result.unloads and shedder.hit_count == 0


def test_hit_count_must_exceed_the_threshold():
    shedder, load = TransferShedder(), cluster({"a:8080": 0.9, "b:8080": 0.2, "c:8080": 0.1})
    for cycle in range(3):
        assert not shedder.find_bundles_for_unloading(load, PulsarConfig(), NOW).unloads, cycle
    assert shedder.find_bundles_for_unloading(load, PulsarConfig(), NOW).unloads


def test_cool_down_blocks_until_the_source_reports_again():
    shedder, load = TransferShedder(), cluster({"a:8080": 0.9, "b:8080": 0.2, "c:8080": 0.1})
    first = shedder.run_cycle(load, NO_DEBOUNCE, NOW)
    assert first.unloads and shedder.recently_unloaded_brokers == {"a:8080": NOW}
    blocked = shedder.run_cycle(load, NO_DEBOUNCE, NOW + 60_000)  # "a:8080" has not published new load data
    assert not blocked.unloads and "CoolDown" in blocked.skips[0].reason
    load.brokers["a:8080"]["updatedAt"] = NOW + 200_000
    for b in load.brokers.values():
        b["updatedAt"] = NOW + 200_000
    after = shedder.run_cycle(load, NO_DEBOUNCE, NOW + 200_000)
    assert "a:8080" not in shedder.recently_unloaded_brokers or after.unloads
    assert not {u.bundle for u in first.unloads} & {u.bundle for u in after.unloads}  # grace period


def test_unload_mode_leaves_the_destination_to_placement():
    config = PulsarConfig({"loadBalancerSheddingConditionHitCountThreshold": "0", "loadBalancerTransferEnabled": "false"})
    result = TransferShedder().find_bundles_for_unloading(cluster({"a:8080": 0.9, "b:8080": 0.2, "c:8080": 0.1}), config, NOW)
    assert result.unloads and all(u.destination is None for u in result.unloads)


def test_a_broker_with_one_reported_bundle_keeps_it():
    load = cluster({"a:8080": 0.9, "b:8080": 0.1}, {"a:8080": [30 * MB], "b:8080": [1 * MB]})
    result = TransferShedder().find_bundles_for_unloading(load, NO_DEBOUNCE, NOW)
    assert not result.unloads and result.skips[-1].reason == "NoBundles"


def test_zero_throughput_and_policy_bundles_are_skipped():
    load = cluster({"a:8080": 0.9, "b:8080": 0.1}, {"a:8080": [0.0, 5 * MB, 6 * MB, 7 * MB]})
    load.namespaces_with_policies = {"t/a"}
    result = TransferShedder().find_bundles_for_unloading(load, NO_DEBOUNCE, NOW)
    assert not result.unloads
    load.namespaces_with_policies = set()
    moved = TransferShedder().find_bundles_for_unloading(load, NO_DEBOUNCE, NOW).unloads
    assert moved and all(u.bundle_load > 0 for u in moved)


def test_outdated_and_missing_load_data():
    load = cluster({"a:8080": 0.9, "b:8080": 0.1, "c:8080": 0.2})
    load.available.append("d:8080")
    result = TransferShedder().find_bundles_for_unloading(load, NO_DEBOUNCE, NOW)
    assert "NoLoadData" in result.skips[0].reason
    stale = cluster({"a:8080": 0.9, "b:8080": 0.1})
    for d in stale.brokers.values():
        d["updatedAt"] = NOW - 3_600_000
    assert "OutDatedData" in TransferShedder().find_bundles_for_unloading(stale, NO_DEBOUNCE, NOW).skips[0].reason


def test_derived_inputs_from_modular_reports():
    def report(cpu, bundles):
        return {"cpu": {"usage": cpu, "limit": 100.0}, "msgThroughputIn": 1e6, "msgThroughputOut": 0.0,
                "lastStats": {b: {"msgThroughputIn": t, "msgThroughputOut": 0.0} for b, t in bundles.items()}}

    load = derive_from_modular({"a:8080": report(30, {"x/y/0x0_0x1": 0.0, "x/y/0x1_0x2": 5.0, "aa/z/0x0_0x1": 9.0}),
                                "b:8080": report(60, {})}, PulsarConfig(), NOW, groups={"aa/z": "group"})
    assert load.brokers["a:8080"]["weightedMaxEMA"] == pytest.approx(0.30000001907348633)
    assert [t["bundleName"] for t in load.top_bundles["a:8080"]] == ["x/y/0x1_0x2"]  # no zero, no policy bundles
    assert "derived" in load.source


def test_swapped_bundles_are_marked_and_not_held_back_by_the_grace_period():
    """When the max broker's next bundle would overshoot, Pulsar sends bundles of the min broker back in exchange
    (minToMaxUnloads) without looking at recentlyUnloadedBundles: only the max broker's bundles are held back."""
    load = cluster({"a:8080": 0.9, "b:8080": 0.5, "c:8080": 0.1}, {"a:8080": [50 * MB, 60 * MB], "c:8080": [10 * MB, 20 * MB]})
    first = TransferShedder().find_bundles_for_unloading(load, NO_DEBOUNCE, NOW).unloads
    assert [(u.broker, u.destination, u.swap) for u in first] == [("c:8080", "a:8080", True), ("a:8080", "c:8080", False)]

    swapped_back = TransferShedder(recently_unloaded_bundles={first[0].bundle: NOW - 1})
    assert swapped_back.find_bundles_for_unloading(load, NO_DEBOUNCE, NOW).unloads[0].bundle == first[0].bundle
    held = TransferShedder(recently_unloaded_bundles={first[1].bundle: NOW - 1})
    assert first[1].bundle not in {u.bundle for u in held.find_bundles_for_unloading(load, NO_DEBOUNCE, NOW).unloads}


@pytest.mark.parametrize("ttl_seconds, transfers", [
    ("600", True),
    (str(2**62), False),  # LoadStats.update multiplies by 1000 in a long: 2^62 x 1000 wraps to 0, and no data is fresh
    (str(2**63 // 1000), True),  # the largest that does not wrap
])
def test_the_load_data_ttl_wraps_as_javas_long_multiplication_does(ttl_seconds, transfers):
    config = NO_DEBOUNCE.overridden(loadBalancerBrokerLoadDataTTLInSeconds=ttl_seconds)
    load = cluster({"a:8080": 0.9, "b:8080": 0.2, "c:8080": 0.1})
    for b in load.brokers.values():
        b["updatedAt"] = NOW - 1
    assert bool(TransferShedder().find_bundles_for_unloading(load, config, NOW).unloads) is transfers


def test_a_transfer_the_anti_affinity_filter_would_refuse_is_not_made():
    """isTransferable runs the leader's broker filters: the underloaded broker already holds more of the bundles'
    anti-affinity group than the overloaded one, so the filter keeps only the source and nothing moves there."""
    config = PulsarConfig({"loadBalancerSheddingConditionHitCountThreshold": "0",
                           "loadBalancerSheddingBundlesWithPoliciesEnabled": "true"})
    load = cluster({"a:8080": 0.9, "b:8080": 0.1}, {"a:8080": [5 * MB, 6 * MB, 7 * MB]})
    owned = {t["bundleName"]: "a:8080" for t in load.top_bundles["a:8080"]}
    load.groups, load.namespaces_with_policies = {"t/a": "payments", "t/x": "Payments"}, {"t/a", "t/x"}
    load.owned = {**owned, **{f"t/x/0x{i:08x}_0x{i + 1:08x}": "b:8080" for i in range(5)}}
    assert not TransferShedder().find_bundles_for_unloading(load, config, NOW).unloads
    load.owned = {**owned, "t/x/0x00000000_0x00000001": "b:8080"}  # b holds fewer of the group: b is a destination
    assert {(u.broker, u.destination) for u in TransferShedder().find_bundles_for_unloading(load, config, NOW).unloads} \
        == {("a:8080", "b:8080")}


def test_an_orphaned_bundle_is_assigned_as_the_extensible_leader_assigns_it():
    """ExtensibleLoadManagerImpl.selectAsync: the broker filters (isolation, anti-affinity), then the least
    weightedMaxEMA the brokers last wrote (within the usage-difference band, at random among the best)."""
    import random

    from lb_pipeline.algorithms.shedding.common import LoadData
    from lb_pipeline.algorithms.shedding.extensible_filters import ExtensiblePlacement
    from lb_pipeline.algorithms.shedding.isolation import isolation_policies
    from lb_pipeline.algorithms.shedding.selection import ClusterState

    store = {"a:8080": bld(0.9, MB), "b:8080": bld(0.2, MB), "c:8080": bld(0.1, MB)}
    placement = ExtensiblePlacement(lambda: store, random.Random(0))
    iso = isolation_policies({"p": {"namespaces": ["t/iso"], "primary": ["a", "b"],
                                    "auto_failover_policy": {"policy_type": "min_available",
                                                             "parameters": {"min_limit": "1"}}}})
    load = LoadData({"a:8080": {"bundles": []}, "b:8080": {"bundles": []}, "c:8080": {"bundles": ["t/y/0x0_0x1"]}})
    state = ClusterState(list(store), iso, {"t/x": "g", "t/y": "g"})
    assert placement.select("t/iso/0x0_0x1", load, PulsarConfig(), state) == "b:8080"  # its primaries only
    assert placement.select("t/other/0x0_0x1", load, PulsarConfig(), state) == "c:8080"  # a, b are no one's shared
    assert placement.select("t/x/0x0_0x1", load, PulsarConfig(), ClusterState(list(store), [], state.groups)) \
        == "b:8080"  # c holds a bundle of the group
