"""The policy paths of broker selection agree with released Pulsar (4.0.8 and 4.0.7) on 600 random clusters
(1,800 bundles) each: which brokers the namespace isolation policies allow, which of them the anti-affinity filter
keeps (the modular leader counts a group's namespaces per broker, the extensible one its owned bundles), whether
the anti-affinity check lets a bundle be unloaded, and which brokers the modular leader's large-topic, class and
version filters keep (bundles handed over by a lookup of a non-persistent topic among them); and on 600 more,
TransferShedder as the extensible leader runs it, every bundle through ``isTransferable`` and its broker filter
pipeline.

Pulsar's answers come from its own ``LoadManagerShared`` and ``SimpleResourceAllocationPolicies`` reading the
cases' policies from an in-memory metadata store (``tests/conformance/java/Policies.java``, ``make
conformance``); the inputs are regenerated here from the case ids (``cases_policies``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lb_pipeline.algorithms import anti_affinity as aa
from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.isolation import isolation_policies
from lb_pipeline.algorithms.shedding.placement import RoundRobinBrokerSelector
from lb_pipeline.algorithms.shedding.selection import ClusterState, ModularPlacement, broker_filters
from tests.conformance.cases_policies import policies_case
from tests.conformance.stored import answers, regenerate
from tests.test_conformance import PROFILES, config_of


def _cluster(case: dict, domains: dict[str, str]) -> tuple[LoadData, ClusterState]:
    """The modular leader's view: a load report per broker with load data (its bundles from the ownership)."""
    owned: dict[str, dict] = {}
    for bundle, broker in case["ownership"].items():
        owned.setdefault(broker, {})[bundle] = {}
    reports = {b: {**data, "lastStats": owned.get(b, {}), "bundles": list(owned.get(b, {}))}
               for b, data in case["lookup"].items()}
    state = ClusterState(list(case["available"]), isolation_policies(case["isolation"]), dict(case["groups"]), domains,
                         frozenset(case["non_persistent"]))
    return LoadData(reports), state


RELEASES = pytest.mark.parametrize("release", ["4.0.8", "4.0.7"])


@RELEASES
def test_isolation_and_anti_affinity_choose_the_brokers_pulsar_chooses(release):
    rows = answers(f"policies-{release}")
    assert len(rows) == 600
    checked = 0
    kinds = {"filtered": 0, "kept_from_unload": 0, "isolated": 0, "version_refused": 0, "assigned": 0,
             "lookup_failed": 0, "non_persistent": 0}
    for row in rows:
        case = regenerate(row, policies_case)
        assert "error" not in row["pulsar"], row
        for query, theirs in zip(case["queries"], row["pulsar"]["queries"], strict=True):
            # as refreshBrokerToFailureDomainMap read them from the store: nothing unless failure domains are enabled
            enabled, config = case["config"]["failureDomainsEnabled"] == "true", config_of(case, PROFILES[release])
            domains = theirs["domains"]
            assert domains == ({b: d for d, brokers in case["domains"].items() for b in brokers} if enabled else {})
            load, state = _cluster(case, domains)
            placement = ModularPlacement(strategy=None)
            bundle, current, ns = query["bundle"], query["current"], query["bundle"].rsplit("/", 1)[0]
            where = (row["case"], bundle)

            allowed = placement.namespace_policy_candidates(bundle, load, state)
            assert sorted(allowed) == theirs["isolation"], where
            unflagged = ModularPlacement(strategy=None).namespace_policy_candidates(
                bundle, load, replace(state, non_persistent=frozenset()))
            kinds["non_persistent"] += sorted(unflagged) != theirs["isolation"]  # the flag changed Pulsar's answer

            counts = placement.anti_affinity_counts(ns, load, state)
            kept = aa.filter_candidates(case["available"], counts, domains, enabled)
            assert sorted(kept) == theirs["anti_affinity_modular"], where
            ext = aa.owned_counts_extensible(ns, case["ownership"], case["groups"])
            assert sorted(aa.filter_candidates(case["available"], ext, domains, enabled)) == \
                theirs["anti_affinity_extensible"], where

            assert placement.should_anti_affinity_unload(bundle, current, load, state) == \
                theirs["should_unload_modular"], where
            assert aa.should_unload(current, allowed, ext) == theirs["should_unload_extensible"], where

            filtered = placement._filter_topic_count(list(case["available"]), load, config)
            try:
                got = sorted(broker_filters(filtered, load, config))
            except ValueError:
                got = "error"
            assert got == theirs["modular_filters"], where
            kinds["version_refused"] += got == "error"
            kinds["filtered"] += len(kept) < len(case["available"])
            kinds["kept_from_unload"] += not theirs["should_unload_modular"]
            kinds["isolated"] += any(p.matches(ns) for p in state.isolation)
            checked += 1
        # the whole selectBrokerForAssignment, one bundle after the other (round robin: deterministic picks)
        load, state = _cluster(case, row["pulsar"]["queries"][0]["domains"])
        leader = ModularPlacement(RoundRobinBrokerSelector())
        picks = [leader.assign(bundle, load, config_of(case, PROFILES[release]), state) for bundle in case["assign"]]
        # where Pulsar's lookup fails (a broker picked without load data), lb_pipeline places nothing
        assert picks == [None if str(p).startswith("error") else p for p in row["pulsar"]["assigned"]], row["case"]
        kinds["lookup_failed"] += sum(str(p).startswith("error") for p in row["pulsar"]["assigned"])
        kinds["assigned"] += sum(p is not None for p in picks)
    assert checked == 1800
    # the cases reach each path often enough to mean something
    assert all(n >= 50 for n in kinds.values()), kinds


@RELEASES
def test_transfer_shedder_moves_only_what_its_broker_filters_let_it_as_pulsar_does(release):
    """TransferShedder in the extensible leader's mode (``Policies.java``, family transfer-policies): every bundle it considers goes
    through ``isTransferable``, the policies gate and the broker filter pipeline (class, topics, version,
    anti-affinity, isolation); 600 cases, each cycle's decisions and skip reason compared exactly; then where
    ``ExtensibleLoadManagerImpl.selectAsync`` assigns 1 to 4 bundles on the last cycle's stores."""
    import random

    from lb_pipeline.algorithms.shedding.extensible_filters import ExtensiblePlacement

    from lb_pipeline.algorithms.shedding.transfer_inputs import has_policies
    from lb_pipeline.algorithms.shedding.transfer_shedder import TransferShedder
    from tests.conformance.cases_policies import transfer_policies_case
    from tests.test_conformance import _extensible, shed_as_pulsar

    rows = answers(f"transfer-policies-{release}")
    assert len(rows) == 600
    moved = blocked = assigned = 0
    for row in rows:
        case, theirs = regenerate(row, transfer_policies_case), row["pulsar"]
        assert "error" not in theirs, row["case"]
        pol = case["policies"]
        isolation = isolation_policies(pol["isolation"])
        enabled = case["config"]["failureDomainsEnabled"]
        domains = {b: d for d, brokers in pol["domains"].items() for b in brokers} if enabled else {}
        named = set(pol["groups"]) | {t["bundle"].rsplit("/", 1)[0] for ts in case["top_bundles"].values() for t in ts}
        shedder = TransferShedder()
        for call, t in zip(case["calls"], theirs["calls"], strict=True):
            load, _ = _extensible(case, call)
            config = config_of(case, PROFILES[release])
            load = replace(load, policies_known=True, lookup=pol["lookup"], isolation=isolation, groups=pol["groups"],
                           broker_domain=domains, owned=pol["owned"],
                           namespaces_with_policies={ns for ns in named if has_policies(ns, pol["groups"], isolation)})
            result = shed_as_pulsar(shedder, load, config, case, call, t)
            moved += len(result.unloads)
            blocked += not result.unloads and any(s.reason == "NoBundles" for s in result.skips)
        # selectAsync on the last call's stores: Pulsar's pick (at random among the best) among lb_pipeline's best
        placement = ExtensiblePlacement(lambda: load.brokers, random.Random(0), pol["lookup"], pol["owned"])
        state = ClusterState(load.available, isolation, pol["groups"], domains, frozenset(case["non_persistent"]))
        for bundle, pick in zip(case["assign"], theirs["assigned"], strict=True):
            best = placement.best(bundle, None, config, state)
            assert (pick in best) if pick is not None else not best, (row["case"], bundle, pick, best)
            assigned += pick is not None
    assert moved >= 100 and blocked >= 50 and assigned >= 500, (moved, blocked, assigned)


@RELEASES
def test_a_bundle_the_leader_starts_averaging_starts_from_its_stored_data_else_its_quota_else_the_default(release):
    """``getBundleDataOrDefault`` then the first sample, as ``updateBundleData`` treats a bundle it has no data of:
    Pulsar's own ``ModularLoadManagerImpl`` on a metadata store holding the case's BundleData and ResourceQuota nodes
    (``Policies.java``, "seeded"), against the simulation's ``BundleAverages`` (a quota: a full window of the quota's
    rates, bandwidths as throughputs; none: the default seed the sample replaces) and, where the leader stored
    BundleData, the update rule on it (``silver/bundle_time_averages`` takes the stored averages)."""
    import numpy as np
    import pandas as pd

    from lb_pipeline.algorithms import time_average as ta
    from lb_pipeline.simulation.bundle_averages import BundleAverages
    from lb_pipeline.simulation.leader_averages import LeaderAverages, quota_values
    from tests.conformance.cases_policies import STATS

    kinds = {"stored": 0, "quota": 0, "default": 0}
    for row in answers(f"policies-{release}"):
        case = regenerate(row, policies_case)
        for seed, theirs in zip(case["seeds"], row["pulsar"]["seeded"], strict=True):
            x = np.array([seed["sample"][f] for f in STATS])
            if "stored" in seed:  # the leader's stored averages win, the quota is not read
                kinds["stored"] += 1
                for w, window in (("shortTermData", ta.SHORT_SAMPLES), ("longTermData", ta.LONG_SAMPLES)):
                    stored = seed["stored"][w]
                    for f, v in zip(STATS, x):
                        n, avg = ta.update(stored["numSamples"], stored[f], v, 1, window)
                        assert (n, avg) == pytest.approx((theirs[w]["numSamples"], theirs[w][f])), (row["case"], w, f)
                continue
            quotas = None
            if "quota" in seed:
                q = seed["quota"]
                quotas = pd.DataFrame([{"bundle": seed["bundle"], "snapshot_ts": 0, "msg_rate_in": q["msgRateIn"],
                                        "msg_rate_out": q["msgRateOut"], "bandwidth_in": q["bandwidthIn"],
                                        "bandwidth_out": q["bandwidthOut"]}])
            kinds["quota" if quotas is not None else "default"] += 1
            leader = LeaderAverages(np.zeros((1, 1), bool), {}, {}, 1.0, "test", quota_values([seed["bundle"]], quotas))
            averages = BundleAverages(1, leader)
            averages.start_afresh(np.array([0]))
            averages.sample(np.array([True]), x[None, :], 1)
            for w, window in (("shortTermData", ta.SHORT_SAMPLES), ("longTermData", ta.LONG_SAMPLES)):
                assert averages.n[window][0] == theirs[w]["numSamples"], (row["case"], w)
                assert averages.avg[window][0] == pytest.approx([theirs[w][f] for f in STATS]), (row["case"], w)
    assert all(n >= 100 for n in kinds.values()), kinds
