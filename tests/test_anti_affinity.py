"""Anti-affinity against the spec's documented sequence and the javadoc example (bundles spec §5)."""

from lb_pipeline.algorithms import anti_affinity as aa

DOMAINS = {"b1": "domain1", "b2": "domain1", "b3": "domain2", "b4": "domain2"}
GROUPS = {f"t/ns{i}": "group-A" for i in range(1, 5)} | {"t/other": None}


def test_docs_sequence_two_domains_two_brokers_each():
    ownership: dict[str, str] = {}
    placed, candidate_sets = [], []
    for i in range(1, 5):
        ns = f"t/ns{i}"
        counts = aa.owned_counts_modular(ns, ownership, GROUPS)
        candidates = aa.filter_candidates(sorted(DOMAINS), counts, DOMAINS, domains_enabled=True)
        candidate_sets.append(set(candidates))
        chosen = candidates[0]
        ownership[f"{ns}/0x00000000_0xffffffff"] = chosen
        placed.append(chosen)
    assert candidate_sets == [{"b1", "b2", "b3", "b4"}, {"b3", "b4"}, {"b2", "b4"}, {"b4"}]
    assert placed == ["b1", "b3", "b2", "b4"]


def test_javadoc_example_keeps_the_least_loaded_domains_then_brokers():
    counts = {"b1": 2, "b2": 1, "b3": 2, "b4": 1, "b5": 2, "b6": 2}
    domains = {"b1": "d1", "b2": "d1", "b3": "d2", "b4": "d2", "b5": "d3", "b6": "d3"}
    assert aa.filter_candidates(sorted(counts), counts, domains, domains_enabled=True) == ["b2", "b4"]


def test_without_domains_only_brokers_count():
    counts = {"b1": 1, "b3": 1}
    assert aa.filter_candidates(["b1", "b2", "b3", "b4"], counts) == ["b2", "b4"]


def test_namespace_without_group_is_not_filtered():
    assert aa.owned_counts_modular("t/other", {"t/ns1/0x0_0x1": "b1"}, GROUPS) is None
    assert aa.filter_candidates(["b1", "b2"], None) == ["b1", "b2"]


def test_group_names_compare_case_insensitively():
    groups = {"t/a": "Group-A", "t/b": "group-a"}
    assert aa.owned_counts_modular("t/a", {"t/b/0x00000000_0xffffffff": "b1"}, groups) == {"b1": 1}


def test_extensible_counts_bundles_not_namespaces():
    ownership = {"t/ns1/0x00000000_0x80000000": "b1", "t/ns1/0x80000000_0xffffffff": "b1", "t/ns2/0x00000000_0xffffffff": "b2"}
    assert aa.owned_counts_modular("t/ns1", ownership, GROUPS) == {"b1": 1, "b2": 1}
    assert aa.owned_counts_extensible("t/ns1", ownership, GROUPS) == {"b1": 2, "b2": 1}


def test_unload_gate():
    # the candidates are every broker the namespace may live on, the current one included
    assert aa.should_unload("b1", ["b1", "b2", "b3"], {"b1": 2, "b2": 1, "b3": 1})
    assert aa.should_unload("b1", ["b1", "b2"], {"b1": 1})  # b2 owns none
    assert not aa.should_unload("b1", ["b1", "b2", "b3"], {"b1": 1, "b2": 1, "b3": 1})
    assert aa.should_unload("b1", ["b1", "b2", "b3"], {"b1": 1, "b2": 1, "b3": 2})  # not every broker has the least
    assert aa.should_unload("b1", ["b2"], None)


def test_unload_gate_counts_the_current_broker_only_as_a_candidate():
    # Pulsar reads the current broker's count inside its loop over candidates: outside them it counts 0
    assert not aa.should_unload("b1", ["b2", "b3"], {"b1": 2, "b2": 1, "b3": 1})


def test_audit_lists_brokers_and_domains_holding_too_many():
    ownership = {"t/ns1/0x00000000_0xffffffff": "b1", "t/ns2/0x00000000_0xffffffff": "b1",
                 "t/ns3/0x00000000_0xffffffff": "b2"}
    findings = aa.audit(ownership, GROUPS, DOMAINS, DOMAINS)
    assert {(f.scope, f.place, f.count, f.least) for f in findings} == {("broker", "b1", 2, 0), ("domain", "domain1", 3, 0)}
    assert "holds 2 namespaces of group group-a" in findings[0].message


def test_audit_is_quiet_when_the_group_is_spread():
    ownership = {f"t/ns{i}/0x00000000_0xffffffff": b for i, b in zip(range(1, 5), ["b1", "b3", "b2", "b4"])}
    assert aa.audit(ownership, GROUPS, DOMAINS, DOMAINS) == []


MOVED_GROUPS = {"t/a": "g", "t/b": "G", "t/c": "g", "t/x": None}
BEFORE = {"t/a/0x0_0x8": "b1", "t/a/0x8_0xf": "b1", "t/b/0x0_0xf": "b2", "t/c/0x0_0xf": "b3", "t/x/0x0_0xf": "b3"}


def test_a_group_bundle_moved_beside_its_group_while_a_broker_held_none_is_a_placement_pulsar_would_not_make():
    (m,) = aa.placements_pulsar_would_not_make(BEFORE, {**BEFORE, "t/b/0x0_0xf": "b1"}, MOVED_GROUPS, ["b1", "b2", "b3", "b4"])
    assert (m.bundle, m.group, m.source, m.broker, m.count, m.least) == ("t/b/0x0_0xf", "g", "b2", "b1", 1, 0)
    assert set(m.kept) == {"b2", "b4"}  # the brokers holding none of the group


def test_moves_pulsar_makes_or_is_forced_to_are_not_flagged():
    brokers = ["b1", "b2", "b3", "b4"]
    assert aa.placements_pulsar_would_not_make(BEFORE, {**BEFORE, "t/b/0x0_0xf": "b4"}, MOVED_GROUPS, brokers) == []
    # b2 and b4 gone: every broker left holds one namespace of the group, so beside another is where it must go
    assert aa.placements_pulsar_would_not_make(BEFORE, {**BEFORE, "t/b/0x0_0xf": "b1"}, MOVED_GROUPS, ["b1", "b3"]) == []
    # a namespace without a group goes anywhere; a split's children stay on the parent's owner
    assert aa.placements_pulsar_would_not_make(BEFORE, {**BEFORE, "t/x/0x0_0xf": "b1"}, MOVED_GROUPS, brokers) == []
    split = {**{k: v for k, v in BEFORE.items() if k != "t/b/0x0_0xf"}, "t/b/0x0_0x8": "b2", "t/b/0x8_0xf": "b2"}
    assert aa.placements_pulsar_would_not_make(BEFORE, split, MOVED_GROUPS, brokers) == []


def test_two_moves_between_snapshots_are_judged_in_either_order():
    """t/c leaves b3 for b4 and t/b leaves b2 for b3: counted from the snapshot before, b3 still held t/c; after the
    first move it held none, and Pulsar may have made them in that order."""
    after = {**BEFORE, "t/c/0x0_0xf": "b4", "t/b/0x0_0xf": "b3"}
    assert aa.placements_pulsar_would_not_make(BEFORE, after, MOVED_GROUPS, ["b1", "b2", "b3", "b4"]) == []


def test_failure_domains_may_keep_a_broker_the_broker_count_alone_would_not():
    """With domains on, Pulsar keeps the domain holding the fewest first: b1, alone in z1 and holding t/a, against
    z2 holding t/c and t/d on b3 and b4; by brokers alone, the empty b5 (or the emptied b2) would be kept."""
    groups = {**MOVED_GROUPS, "t/d": "g"}
    before = {"t/a/0x0_0xf": "b1", "t/b/0x0_0xf": "b2", "t/c/0x0_0xf": "b3", "t/d/0x0_0xf": "b4"}
    domains = {"b1": "z1", "b2": "z2", "b3": "z2", "b4": "z2", "b5": "z2"}
    after = {**before, "t/b/0x0_0xf": "b1"}
    brokers = ["b1", "b2", "b3", "b4", "b5"]
    assert aa.placements_pulsar_would_not_make(before, after, groups, brokers, domains) == []
    (m,) = aa.placements_pulsar_would_not_make(before, after, groups, brokers)
    assert m.kept == ("b2", "b5")


def test_group_names_compare_raw_as_pulsars_equals_ignore_case_and_blank_is_java_blank():
    """Pulsar compares the raw names (``equalsIgnoreCase``, never trimmed) and counts a name as no group only when
    ``StringUtils.isBlank``: ``" g "`` is a group of its own, apart from ``"g"``; a no-break space is a group (Java's
    ``isWhitespace`` leaves it out), an em space is not; ``İ`` equals ``i`` (Java's one-character case mapping) and
    ``ß`` is not ``SS``."""
    from lb_pipeline.algorithms.shedding.common import LoadData
    from lb_pipeline.algorithms.shedding.selection import ClusterState, ModularPlacement
    from lb_pipeline.algorithms.shedding.placement import LeastLongTermMessageRate
    from tests.test_shedders_modular import broker

    ownership = {"t/a/0x0_0x1": "b1", "t/b/0x0_0x1": "b2", "t/c/0x0_0x1": "b3"}
    groups = {"t/a": " g ", "t/b": " G ", "t/c": "g", "t/x": " g "}
    assert aa.owned_counts_modular("t/x", ownership, groups) == {"b1": 1, "b2": 1}
    assert aa.owned_counts_modular("t/x", ownership, {**groups, "t/x": "\u2003"}) is None
    assert aa.owned_counts_modular("t/x", ownership, {**groups, "t/x": "\u00a0", "t/c": "\u00a0"}) == {"b3": 1}
    assert aa.owned_counts_modular("t/x", ownership, {"t/a": "İ", "t/x": "i", "t/b": "ß", "t/c": "SS"}) == {"b1": 1}
    # the placement path counts the same way: the bundle of t/x goes where no " g " namespace is
    load = LoadData({b: broker(10, [bundle]) for bundle, b in ownership.items()}, {})
    state = ClusterState(sorted(load.brokers), groups=groups)
    assert ModularPlacement(LeastLongTermMessageRate()).anti_affinity_counts("t/x", load, state) == {"b1": 1, "b2": 1}
