"""Pulsar's whole placement path (ModularLoadManagerImpl.selectBroker / selectBrokerForAssignment, 4.0.8) on
small scripted clusters whose right answer is known."""

import random

import pytest

from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.driver import ModularShedding
from lb_pipeline.algorithms.shedding.placement import LeastLongTermMessageRate, RoundRobinBrokerSelector
from lb_pipeline.algorithms.shedding.isolation import isolation_policies
from lb_pipeline.algorithms.shedding.selection import ClusterState, ModularPlacement
from lb_pipeline.model import regex
from lb_pipeline.model.config import PulsarConfig
from tests.test_shedders_modular import bdata, broker

CONFIG = PulsarConfig()


def cluster(cpu: dict[str, float], bundles: dict[str, list[str]] | None = None, rates: dict[str, float] | None = None):
    """Brokers ``host:8080`` with a CPU usage, the bundles they report and a long-term message rate."""
    reports, data = {}, {}
    for b, u in cpu.items():
        owned = (bundles or {}).get(b, [])
        rate = (rates or {}).get(b, 100.0)
        reports[b] = broker(u, owned, rate=rate)
        reports[b]["timeAverageData"] = {"longTermMsgRateIn": rate, "longTermMsgRateOut": 0.0}
        for x in owned:
            data[x] = bdata(rate=(rates or {}).get(b, 100.0) / max(1, len(owned)))
    return LoadData(reports, data)


def test_isolation_policy_keeps_a_namespace_on_its_primaries_and_fails_over_to_secondaries():
    load = cluster({"a1:8080": 10, "a2:8080": 10, "s1:8080": 10, "s2:8080": 10})
    policy = {"namespaces": ["tenant/iso.*"], "primary": ["a1", "a2"], "secondary": ["s1"],
              "auto_failover_policy": {"policy_type": "min_available", "parameters": {"min_limit": "1", "usage_threshold": "80"}}}
    state = ClusterState(list(load.brokers), isolation_policies({"p1": policy}))
    placement = ModularPlacement(LeastLongTermMessageRate())
    assert sorted(placement.namespace_policy_candidates("tenant/iso-1/0x0_0x1", load, state)) == ["a1:8080", "a2:8080"]
    # primaries of some policy are not shared: other namespaces only get s1 and s2
    assert sorted(placement.namespace_policy_candidates("tenant/other/0x0_0x1", load, state)) == ["s1:8080", "s2:8080"]
    only_a1 = ClusterState(["a1:8080", "s1:8080", "s2:8080"], isolation_policies(
        {"p1": {**policy, "auto_failover_policy": {"policy_type": "min_available", "parameters": {"min_limit": "2"}}}}))
    assert sorted(placement.namespace_policy_candidates("tenant/iso-1/0x0_0x1", load, only_a1)) == ["a1:8080", "s1:8080"]


def test_a_policy_whose_regexes_backtrack_catastrophically_places_as_its_plain_twin():
    # (.|.|.|.|.|.)*x is .*x for a whole match, but a backtracking engine tries 6^n ways on a name without the x
    load = cluster({"broker-0.pulsar.svc:8080": 10, "broker-1.pulsar.svc:8080": 10, "broker-x:8080": 10})
    placement = ModularPlacement(LeastLongTermMessageRate())

    def candidates(namespaces: str, primary: str, bundle: str) -> list[str]:
        policies = isolation_policies({"p": {"namespaces": [namespaces, "tenant/pinned"], "primary": [primary]}})
        return sorted(placement.namespace_policy_candidates(bundle, load, ClusterState(list(load.brokers), policies)))

    for bundle in ("tenant/pinned-but-not-quite-the-same-name/0x0_0x1", "tenant/pinned/0x0_0x1"):
        hostile = candidates("(.|.|.|.|.|.)*x", "(.|.|.|.|.|.)*x", bundle)
        assert hostile == candidates(".*x", ".*x", bundle)
        assert hostile == (["broker-x:8080"] if bundle.startswith("tenant/pinned/") else
                           ["broker-0.pulsar.svc:8080", "broker-1.pulsar.svc:8080"])


def test_a_policy_of_thousands_of_regexes_is_compiled_once_for_all_snapshots_and_placements(monkeypatch):
    compiled, real = [], regex.compile_whole
    monkeypatch.setattr(regex, "compile_whole", lambda p: compiled.append(p) or real(p))
    policy = {"namespaces": [f"t-{i}/volume-.*" for i in range(3_000)],
              "primary": [f"volume-{i}\\.svc" for i in range(3_000)]}
    load = cluster({**{f"volume-{b}.svc:8080": 10 for b in range(20)}, "shared:8080": 10})
    placement = ModularPlacement(LeastLongTermMessageRate())
    for _ in range(3):  # three snapshots carrying the same policy
        state = ClusterState(list(load.brokers), isolation_policies({"big": policy}))
        for i in range(5):
            assert placement.namespace_policy_candidates(f"acme/orders-{i}/0x0_0x1", load, state) == ["shared:8080"]
        pinned = placement.namespace_policy_candidates("t-7/volume-x/0x0_0x1", load, state)
        assert sorted(pinned) == sorted(b for b in load.brokers if b != "shared:8080")
    assert sorted(compiled) == sorted(policy["namespaces"] + policy["primary"])


def test_an_isolation_policy_with_a_backreference_is_refused_by_name():
    with pytest.raises(ValueError, match=r"isolation policy 'p': primary regex '\(a\)\\\\1': a backreference"):
        isolation_policies({"p": {"namespaces": ["tenant/ns"], "primary": [r"(a)\1"]}})


def test_a_bundle_pinned_to_its_only_broker_is_not_shed():
    b = ["tenant/iso/0x00000000_0x80000000", "tenant/iso/0x80000000_0xffffffff"]
    load = cluster({"a1:8080": 95, "s1:8080": 5}, {"a1:8080": b})
    load.bundle_data.update({x: bdata(throughput=50e6) for x in b})
    load.brokers["a1:8080"]["msgThroughputIn"] = 100e6
    state = ClusterState(list(load.brokers), isolation_policies({"p": {"namespaces": ["tenant/iso"], "primary": ["a1"]}}))
    result = ModularShedding.named("OverloadShedder", CONFIG).run_cycle(load, CONFIG, 0, state)
    assert not result.unloads
    assert any("isolation policies" in s.reason for s in result.skips)


def test_brokers_over_the_topic_limit_are_skipped_unless_all_are():
    load = cluster({"a:8080": 10, "b:8080": 10}, rates={"a:8080": 1.0, "b:8080": 500.0})
    load.brokers["a:8080"]["numTopics"] = 60_000
    placement = ModularPlacement(LeastLongTermMessageRate())
    state = ClusterState(list(load.brokers))
    assert placement.select("t/n/0x0_0x1", load, CONFIG, state) == "b:8080"  # a is least loaded but over 50000
    load.brokers["b:8080"]["numTopics"] = 70_000
    assert placement.select("t/n/0x0_0x1", load, CONFIG, state) == "a:8080"  # nobody qualifies: the filter yields


def test_anti_affinity_sends_a_namespace_away_from_brokers_holding_its_group():
    load = cluster({"a:8080": 10, "b:8080": 10, "c:8080": 10},
                   {"a:8080": ["t/g1/0x00000000_0xffffffff"], "b:8080": ["t/g2/0x00000000_0xffffffff"]},
                   rates={"a:8080": 1.0, "b:8080": 1.0, "c:8080": 900.0})
    state = ClusterState(list(load.brokers), groups={"t/g1": "grp", "t/g2": "GRP", "t/g3": "grp"})
    placement = ModularPlacement(LeastLongTermMessageRate())
    # c carries the most traffic, but a and b already hold a namespace of the group (names compare case-blind)
    assert placement.select("t/g3/0x00000000_0xffffffff", load, CONFIG, state) == "c:8080"


def test_failure_domains_are_balanced_first_when_enabled():
    load = cluster({"a:8080": 10, "b:8080": 10, "c:8080": 10}, {"a:8080": ["t/g1/0x00000000_0xffffffff"]},
                   rates={"a:8080": 1.0, "b:8080": 1.0, "c:8080": 900.0})
    state = ClusterState(list(load.brokers), groups={"t/g1": "grp", "t/g2": "grp"},
                         broker_domain={"a:8080": "east", "b:8080": "east", "c:8080": "west"})
    placement = ModularPlacement(LeastLongTermMessageRate())
    assert placement.select("t/g2/0x00000000_0xffffffff", load, CONFIG, state) == "b:8080"  # same broker rule only
    enabled = CONFIG.overridden(failureDomainsEnabled=True)
    assert placement.select("t/g2/0x00000000_0xffffffff", load, enabled, state) == "c:8080"  # the other domain


def test_bundles_of_a_namespace_are_spread_evenly_by_default():
    own = {"a:8080": ["t/n/0x00000000_0x40000000", "t/n/0x40000000_0x80000000"], "b:8080": ["t/x/0x00000000_0xffffffff"]}
    load = cluster({"a:8080": 10, "b:8080": 10}, own, rates={"a:8080": 1.0, "b:8080": 900.0})
    placement, state = ModularPlacement(LeastLongTermMessageRate()), ClusterState(["a:8080", "b:8080"])
    assert placement.select("t/n/0x80000000_0xffffffff", load, CONFIG, state) == "b:8080"
    uneven = CONFIG.overridden(loadBalancerDistributeBundlesEvenlyEnabled=False)
    assert placement.select("t/n/0x80000000_0xffffffff", load, uneven, state) == "a:8080"


def test_assignment_preallocates_so_a_burst_of_lookups_spreads_out():
    load = cluster({"a:8080": 10, "b:8080": 10}, rates={"a:8080": 100.0, "b:8080": 130.0})
    config = CONFIG.overridden(loadBalancerDistributeBundlesEvenlyEnabled=False)
    state = ClusterState(["a:8080", "b:8080"])
    shedding = ModularPlacement(LeastLongTermMessageRate())
    new = [f"t/n/0x{i:08x}_0x{i + 1:08x}" for i in range(2)]
    for x in new:
        load.bundle_data[x] = bdata(rate=50.0)  # 50 msg/s in the long term, each
    # a shedding destination is not preallocated in 4.0.8: both bundles go to the same least loaded broker
    assert [shedding.select(x, load, config, state) for x in new] == ["a:8080", "a:8080"]
    lookups = ModularPlacement(LeastLongTermMessageRate())
    assert [lookups.assign(x, load, config, state) for x in new] == ["a:8080", "b:8080"]
    assert lookups.assign(new[0], load, config, state) == "a:8080"  # a preallocated bundle keeps its broker
    lookups.new_cycle()  # fresh reports: preallocations are dropped
    assert lookups.assign(new[1], load, config, state) == "a:8080"


def test_a_pick_over_the_overload_threshold_is_made_again_among_all_policy_candidates():
    load = cluster({"hot:8080": 99, "cold:8080": 10})
    placement = ModularPlacement(RoundRobinBrokerSelector())
    state = ClusterState(["hot:8080", "cold:8080"])
    picks = [placement.select(f"t/n{i}/0x0_0x1", load, CONFIG, state) for i in range(4)]
    # whenever round robin lands on the overloaded broker, the second pick moves on to the other one
    assert picks == ["cold:8080"] * 4 and placement.strategy.count > 4


def test_prefer_later_versions_and_the_load_manager_class_filter():
    load = cluster({"old:8080": 10, "new:8080": 10, "ext:8080": 10}, rates={"old:8080": 1.0, "new:8080": 500.0,
                                                                             "ext:8080": 0.5})
    load.brokers["old:8080"]["brokerVersionString"] = "4.0.7"
    load.brokers["new:8080"]["brokerVersionString"] = "4.0.8"
    load.brokers["ext:8080"]["loadManagerClassName"] = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
    placement, state = ModularPlacement(LeastLongTermMessageRate(rng=random.Random(1))), ClusterState(list(load.brokers))
    assert placement.select("t/n/0x0_0x1", load, CONFIG, state) == "old:8080"  # ext runs another load manager
    assert placement.select("t/n/0x0_0x1", load, CONFIG.overridden(preferLaterVersions=True), state) == "new:8080"
    load.brokers["old:8080"]["brokerVersionString"] = "not a version"  # the filter fails: back to all candidates
    assert placement.select("t/n/0x0_0x1", load, CONFIG.overridden(preferLaterVersions=True), state) == "ext:8080"


def test_a_broker_whose_report_names_no_load_manager_class_is_not_a_candidate_as_in_pulsar():
    """During a rolling upgrade a broker older than the field writes its report without ``loadManagerClassName``:
    Pulsar's ``BrokerLoadManagerClassFilter`` compares null with the configured class and removes it, however idle
    (LeastLongTermMessageRate would pick it); with no broker left, the whole set is back."""
    load = cluster({"new:8080": 10, "old:8080": 10}, rates={"new:8080": 1000.0, "old:8080": 10.0})
    del load.brokers["old:8080"]["loadManagerClassName"]
    placement, state = ModularPlacement(LeastLongTermMessageRate(rng=random.Random(1))), ClusterState(list(load.brokers))
    assert placement.select("t/n/0x0_0x1", load, CONFIG, state) == "new:8080"
    del load.brokers["new:8080"]["loadManagerClassName"]  # no broker names the class: the filter leaves none
    assert placement.select("t/n/0x0_0x1", load, CONFIG, state) == "old:8080"


@pytest.mark.parametrize("strategy", [RoundRobinBrokerSelector, LeastLongTermMessageRate])
def test_a_destination_the_leader_has_no_load_data_of_ends_the_cycles_unloads_as_pulsars_exception_does(strategy):
    """An isolation policy's only broker is available but has no load report: Pulsar's ``selectBroker`` reads its load
    data (the overload check, or the strategy's score) and throws, out of ``doLoadShedding``'s loops
    (ModularLoadManagerImpl 4.0.x): the unloads the cycle made before stand, none after it is made."""
    from lb_pipeline.algorithms.shedding.driver import LOOKUP_FAILED
    from lb_pipeline.algorithms.shedding.overload_shedder import OverloadShedder

    free = [f"tenant/free/0x{i:08x}_0x{i + 1:08x}" for i in range(2)]
    iso = "tenant/iso/0x00000000_0x00000001"
    load = cluster({"hot:8080": 95, "cold:8080": 5}, {"hot:8080": [free[0], iso, free[1]]})
    load.bundle_data.update({free[0]: bdata(throughput=30e6), iso: bdata(throughput=25e6), free[1]: bdata(throughput=20e6)})
    load.brokers["hot:8080"]["msgThroughputIn"] = 120e6
    policy = {"namespaces": ["tenant/iso"], "primary": ["ghost"], "secondary": [],
              "auto_failover_policy": {"policy_type": "min_available", "parameters": {"min_limit": "1"}}}
    state = ClusterState(["hot:8080", "cold:8080", "ghost:8080"], isolation_policies({"p": policy}))
    config = CONFIG.overridden(loadBalancerBrokerOverloadedThresholdPercentage="50")
    run = ModularShedding(OverloadShedder(), ModularPlacement(strategy()), 0)
    result = run.run_cycle(load, config, 0, state)
    found = OverloadShedder().find_bundles_for_unloading(load, config).unloads
    assert [u.bundle for u in found] == [free[0], iso, free[1]]  # the largest first, as many as it takes
    assert [(u.bundle, u.destination) for u in result.unloads] == [(free[0], "cold:8080")]
    assert result.skips[-1].bundle == iso and result.skips[-1].reason == LOOKUP_FAILED.format("ghost:8080")
    assert free[1] not in run.recently_unloaded and free[0] in run.recently_unloaded
    # a lookup (assignment) of the isolated bundle fails alike: nothing is placed
    assert ModularPlacement(strategy()).assign(iso, load, config, state) is None
