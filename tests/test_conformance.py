"""lb_pipeline agrees exactly with released Pulsar (4.0.8, and 4.0.7 where it differs) on 2,990 random inputs (the
split triggers' 1,200 more in ``test_conformance_triggers``, the policy paths' 2,400 in
``test_conformance_policies``).

Pulsar's answers were produced by its own classes through ../shared/tools/pulsar-oracle and stored under
tests/conformance/data (``make conformance`` rebuilds them); the inputs are regenerated here from the case ids.
Compared exactly: every unload, per broker in Pulsar's order (hash-map ties included: lb_pipeline reproduces
Java's iteration orders), AvgShedder's planned destinations, placement histories and round-robin picks,
TransferShedder decisions, skip reasons and unrounded load statistics. Where Pulsar picks at random
(LeastLongTermMessageRate, LeastResourceUsageWithWeight), its pick must be one of the brokers lb_pipeline
says it picks from.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.driver import MODULAR_STRATEGIES, PLACEMENTS
from lb_pipeline.algorithms.shedding.placement import ExtensibleLeastResourceUsageWithWeight
from lb_pipeline.algorithms.shedding.selection import remove_most_servicing_brokers
from lb_pipeline.algorithms.shedding.transfer_inputs import ExtensibleLoad
from lb_pipeline.algorithms.shedding.transfer_shedder import TransferShedder, load_stats
from lb_pipeline.algorithms.splits import ALGORITHMS, SplitRefused, TopicLoad, split_boundary
from lb_pipeline.model.broker_load_data import BrokerLoadData
from lb_pipeline.model.bundles import (
    Bundle, NamespaceBundles, format_boundary, format_range, normalize_topic_name, parse_range, topic_hash,
    topic_namespace,
)
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.javahash import JavaHashMap, concurrent_hash_map_order, spread, string_hash
from lb_pipeline.model.javasort import ComparisonContractViolation, java_int_diff, timsort
from tests.conformance.cases import shedder_case
from tests.conformance.cases_extensible import placement_case, transfer_case
from tests.conformance.cases_splits import hashing_case, split_case
from tests.conformance.java_orders import keys
from tests.conformance.regenerate import as_positions, digest
from tests.conformance.stored import answers, regenerate

PROFILES = {"4.0.8": "pulsar-4.0", "4.0.7": "pulsar-4.0.7"}


def config_of(case: dict, profile: str = "pulsar-4.0") -> PulsarConfig:
    return PulsarConfig({k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in case["config"].items()}, profile)


def same(a: float, b: float | str) -> bool:
    a, b = float(a), float(b)  # the oracle writes NaN as "NaN" (JSON has no NaN)
    return (a != a and b != b) or a == b


def test_the_suite_covers_at_least_1000_inputs_and_every_family():
    counts = {name: len(answers(name)) for name in ("shedders-4.0.8", "shedders-4.0.7", "placement-4.0.8",
                                                     "transfer-4.0.8", "splits-4.0.8", "hashing-4.0.8",
                                                     "triggers-4.0.8", "extensible-triggers-4.0.8", "policies-4.0.8",
                                                     "policies-4.0.7", "transfer-policies-4.0.8",
                                                     "transfer-policies-4.0.7", "java-orders")}
    assert sum(counts.values()) >= 1000 and all(counts.values()), counts
    strategies = {regenerate(r, shedder_case)["strategy"] for r in answers("shedders-4.0.8")[:8]}
    assert strategies == set(MODULAR_STRATEGIES)


@pytest.mark.parametrize("release", ["4.0.8", "4.0.7"])
def test_modular_shedders_unload_what_pulsar_unloads(release):
    mismatches, cycles, unloads = [], 0, 0
    for row in answers(f"shedders-{release}"):
        case = regenerate(row, shedder_case)
        config = config_of(case, PROFILES[release])
        strategy = MODULAR_STRATEGIES[case["strategy"]]()
        for cy, theirs in zip(case["cycles"], row["pulsar"]["cycles"], strict=True):
            load = LoadData(cy["brokers"], cy["bundleData"], cy.get("recentlyUnloadedBundles") or {})
            result = strategy.find_bundles_for_unloading(load, config)
            cycles += 1
            mine: dict[str, list[str]] = defaultdict(list)
            for u in result.unloads:
                mine[u.broker].append(u.bundle)
            expected: dict[str, list[str]] = defaultdict(list)
            for u in theirs["unloads"]:
                expected[u["broker"]].append(u["bundle"])
            unloads += len(theirs["unloads"])
            if dict(mine) != dict(expected):
                mismatches.append((row["case"], theirs["index"], "unloads"))
            if "destinations" in theirs:
                planned = {b: strategy.select_broker(list(load.brokers), b, load, config) for b in theirs["destinations"]}
                if planned != theirs["destinations"]:
                    mismatches.append((row["case"], theirs["index"], "destinations"))
    assert cycles > 500 and unloads > 1000
    assert not mismatches, f"{len(mismatches)} of {cycles} cycles differ from Pulsar {release}: {mismatches[:5]}"


def test_profile_defaults_are_the_release_defaults():
    """Every configuration value Pulsar 4.0.8 used, read back from its ServiceConfiguration, is lb_pipeline's."""
    for row in answers("shedders-4.0.8")[:40]:
        config = config_of(regenerate(row, shedder_case))
        for key, value in row["pulsar"]["effective_config"].items():
            if key == "loadBalancerSheddingExcludedNamespaces" or value is None:
                continue
            ours = config.get_bool(key) if isinstance(value, bool) else config.get_float(key)
            assert ours == value, (key, ours, value)


def test_placement_strategies_choose_as_pulsar_does():
    checked = 0
    for row in answers("placement-4.0.8"):
        case = regenerate(row, placement_case)
        config, name = config_of(case), case["strategy"]
        if name.startswith("LoadManagerShared."):
            for step, theirs in zip(case["steps"], row["pulsar"]["steps"], strict=True):
                ns = step["assignedBundle"].rsplit("/", 1)[0]
                kept = remove_most_servicing_brokers(ns, step["candidates"], step["bundleRangeCache"])
                assert sorted(kept) == theirs["candidates_after"], row["case"]
                checked += 1
            continue
        strategy = PLACEMENTS[name]()
        for step, theirs in zip(case["steps"], row["pulsar"]["steps"], strict=True):
            load = LoadData(step["brokers"])
            if name == "RoundRobinBrokerSelector":
                assert strategy.select(step["candidates"], load, config) == theirs["selected"], row["case"]
                assert strategy.count == theirs["state_after"]["count"]
            else:
                best = strategy.best(step["candidates"], load, config)
                assert theirs["selected"] in best, (row["case"], theirs["selected"], best)
                if name == "LeastResourceUsageWithWeight":
                    history = theirs["state_after"]["brokerAvgResourceUsageWithWeight"]
                    assert sorted(strategy.history) == sorted(history), row["case"]
                    assert all(same(strategy.history[b], v) for b, v in history.items()), row["case"]
            checked += 1
    assert checked > 500


def _extensible(case: dict, call: dict) -> tuple[ExtensibleLoad, PulsarConfig]:
    pick = lambda key: (call.get("overrides") or {}).get(key, case.get(key))  # noqa: E731
    brokers = pick("brokers")
    order = list(case["broker_order"]) + [b for b in brokers if b not in case["broker_order"]]
    store = {b: {**{k: v for k, v in brokers[b].items() if k != "updatedAt_ms"}, "updatedAt": brokers[b]["updatedAt_ms"]}
             for b in order if brokers.get(b) is not None}
    tops = {b: [{"bundleName": t["bundle"], "stats": t} for t in ts] for b, ts in pick("top_bundles").items()}
    ownership = pick("ownership") or {}
    owners = {b: "(another broker)" for b in ownership.get("not_owned", [])} if ownership.get("check_enabled") else {}
    return ExtensibleLoad(store, tops, list(pick("available_brokers")), owners, policies_known=False), config_of(case)


def shed_as_pulsar(shedder: TransferShedder, load: ExtensibleLoad, config: PulsarConfig, case: dict, call: dict,
                   theirs: dict):
    """One TransferShedder call of a case: the same decisions (source, bundle, destination, reason) and the same
    skip reason as Pulsar's; the result, for what else a test compares."""
    shedder.recently_unloaded_bundles = dict(call.get("recently_unloaded_bundles") or {})
    shedder.recently_unloaded_brokers = dict(call.get("recently_unloaded_brokers") or {})
    result = shedder.find_bundles_for_unloading(load, config, case["now_ms"])
    mine = sorted((u.broker, u.bundle, u.destination or "", u.reason) for u in result.unloads)
    expected = sorted((d["source"], d["bundle"], d["destination"] or "", d["reason"]) for d in theirs["decisions"])
    assert mine == expected, (case["name"], theirs["index"])
    skip = next((s.reason for s in result.skips if not s.broker), None)
    assert skip == theirs["skip_reason"], (case["name"], theirs["index"])
    return result


def test_transfer_shedder_and_the_extensible_parts_agree_with_pulsar():
    checked = defaultdict(int)
    for row in answers("transfer-4.0.8"):
        case, theirs = regenerate(row, transfer_case), row["pulsar"]
        kind = case["kind"]
        if kind == "load_stats":
            brokers = {b: {**d, "updatedAt": case.get("now_ms", 0)} for b, d in case["brokers"].items()}
            stats = load_stats(ExtensibleLoad(brokers, {}, list(brokers)), {}, config_of(case), case.get("now_ms", 0))
            assert same(stats.avg, theirs["avg"]) and same(stats.std, theirs["std"]), row["case"]
        elif kind == "broker_load_data":
            data = BrokerLoadData()
            for i, (u, t) in enumerate(zip(case["updates"], theirs["updates"], strict=True)):
                data.update({r: tuple(v) for r, v in u["usage"].items()}, u["msgThroughputIn"], u["msgThroughputOut"],
                            u["msgRateIn"], u["msgRateOut"], u["bundleCount"], u["topics"], config_of(case), 1 + i)
                for k in ("maxResourceUsage", "weightedMaxEMA", "msgThroughputEMA"):
                    assert same(getattr(data, k), t[k]), (row["case"], k)
        elif kind == "placement_least_resource_usage_with_weight":
            strategy = ExtensibleLeastResourceUsageWithWeight()
            for step, t in zip(case["steps"], theirs["steps"], strict=True):
                best = strategy.best(step["candidates"], step["broker_weightedMaxEMA"], config_of(case))
                assert t["selected"] in best, row["case"]
                if "best_brokers" in t:  # older releases expose the list Pulsar picked from
                    assert sorted(best) == t["best_brokers"], row["case"]
        else:
            shedder = TransferShedder()
            for call, t in zip(case["calls"], theirs["calls"], strict=True):
                result = shed_as_pulsar(shedder, *_extensible(case, call), case, call, t)
                stats = result.load_stats
                if "load_avg" in t:
                    assert same(stats.avg, t["load_avg"]) and same(stats.reported_std, t["load_std"]), (row["case"], t["index"])
                assert same(stats.std, t["final_std"]), (row["case"], t["index"])
        checked[kind] += 1
    assert min(checked.values()) >= 50, dict(checked)


def test_java_hash_orders_and_timsort_are_javas():
    exact = approximated = sorts = 0
    for row in answers("java-orders"):
        kind, items = keys(int(row["case"].rsplit("-", 1)[1]))
        assert digest([row["case"], kind, *items]) == row["input"], "the generator changed; run `make conformance`"
        if kind == "int-sort":
            try:
                mine = timsort(list(range(len(items))), lambda a, b: java_int_diff(float(items[a]), float(items[b])))
            except ComparisonContractViolation as e:
                mine = f"ERROR: IllegalArgumentException: {e}"
            assert mine == row["java"], row["case"]
            sorts += 1
            continue
        if kind == "chm":
            assert as_positions(kind, items, "\t".join(["x", *concurrent_hash_map_order(items)])) == row["java"]
            exact += 1
            continue
        m, groups = JavaHashMap(), ("\t".join(items)).split("\t\t") if kind == "hashmap-reused" else ["\t".join(items)]
        answers_, all_exact = [], True
        for g in groups:
            answers_.append("\t".join(m.order(g.split("\t"))))
            all_exact &= m.exact
        answer = "\t\t".join(answers_)
        if all_exact:
            assert as_positions(kind, items, "x\t" + answer) == row["java"], row["case"]
            exact += 1
        else:  # 9+ keys with one hash in a 64+ table: a HashMap tree bin, approximated and flagged as such
            buckets = Counter(spread(string_hash(k)) & (m.capacity - 1) for k in items if k)
            assert m.capacity >= 64 and max(buckets.values()) >= 9, row["case"]
            approximated += 1
    assert sorts >= 50 and exact >= 140, (sorts, exact, approximated)


def test_split_algorithms_cut_where_pulsar_cuts():
    """Pulsar splits (its algorithm returns boundaries and its bundle factory accepts them) exactly where lb_pipeline
    does, into the same children. Where Pulsar does not, lb_pipeline says no split; the way differs at the edges and
    that is allowed: Pulsar's algorithm may return a cut on the bundle's lower bound, or none in an empty list, and
    fail afterwards, where lb_pipeline returns no cut with the reason. Wherever both return cuts, they are the same."""
    outcomes = Counter()
    for row in answers("splits-4.0.8"):
        case, theirs = regenerate(row, split_case), row["pulsar"]
        bundle = Bundle("pulsar-oracle/splits", *parse_range(case["bundle"]))
        topics = [TopicLoad(t["name"], t["hash"], t["msgRate"], t["throughput"]) for t in case["topics"]]
        config = PulsarConfig({k: str(v) for k, v in case["args"].items() if k != "positions"})
        try:
            mine = split_boundary(case["algorithm"], bundle, topics, config, case["args"].get("positions"))
        except SplitRefused as refused:  # Pulsar throws too, with the same message (no positions given)
            assert theirs.get("error", "").endswith(f"IllegalArgumentException: {refused}"), (row["case"], theirs)
            outcomes[(case["algorithm"], False)] += 1
            continue
        assert "error" not in theirs, (row["case"], theirs)
        cuts = [format_boundary(b) for b in mine.boundaries or ()]
        assert mine.splits == bool(theirs.get("children")), (row["case"], theirs, mine)
        if mine.splits:
            assert cuts == theirs["boundaries"], row["case"]
            assert [format_range(c.lower, c.upper) for c in mine.children] == theirs["children"], row["case"]
        elif cuts and theirs.get("boundaries"):
            assert cuts == theirs["boundaries"] and mine.failure and "children_error" in theirs, row["case"]
        outcomes[(case["algorithm"], mine.splits)] += 1
    assert len(outcomes) == 2 * len(ALGORITHMS) and min(outcomes.values()) >= 10, outcomes  # each splits, and not


def test_topic_names_hash_and_land_in_the_bundle_pulsar_finds():
    """``TopicName`` (short names, the domain in any case, what it refuses), the CRC-32 of the name it prints and the
    bundle ``NamespaceBundles.findBundle`` returns, for 1,200 names in random layouts."""
    checked = Counter()
    for row in answers("hashing-4.0.8"):
        case = regenerate(row, hashing_case)
        for mine, theirs in zip(case["cases"], row["pulsar"]["cases"], strict=True):
            topic = mine["topic"]
            if "error" in theirs:
                with pytest.raises(ValueError):
                    normalize_topic_name(topic)
                checked["refused"] += 1
                continue
            assert normalize_topic_name(topic) == theirs["hashed_string"], topic
            assert topic_hash(topic) == theirs["hash_int"], topic
            found = NamespaceBundles(topic_namespace(topic), mine["boundaries"]).find_bundle(topic)
            assert format_range(found.lower, found.upper) == theirs["bundle"], topic
            checked["found"] += 1
    assert checked["refused"] >= 50 and checked["found"] >= 1000, checked
