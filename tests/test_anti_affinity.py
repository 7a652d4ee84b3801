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
