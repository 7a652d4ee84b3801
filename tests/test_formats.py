"""No content can make a parser raise anything but a problem naming the field: one test per class of failure."""

import json

import pytest

from lb_pipeline.formats import brokers, cluster, topics
from lb_pipeline.formats.values import FileProblem, Problem, RowProblem, boolean, integer, num


@pytest.mark.parametrize("value, why", [
    ("fast", "a string"), (True, "a boolean"), ({"x": 1}, "an object"), (float("inf"), "finite"), (-1.0, ">= 0"),
    (10**400, "401 digits"),  # no float holds it
])
def test_a_bad_number_names_its_field(value, why):
    with pytest.raises(RowProblem) as caught:
        num({"msgRateIn": value}, "msgRateIn", "lastStats[x].msgRateIn")
    assert caught.value.problem.field == "lastStats[x].msgRateIn" and why in caught.value.problem.reason


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 1e30, 1.5])
def test_integers_must_fit_a_java_long(value):
    with pytest.raises(RowProblem, match="within 64 bits"):
        integer({"n": value}, "n", "n")
    assert integer({"n": 2**63 - 1}, "n", "n") == 2**63 - 1 and integer({"n": 1.0e7}, "n", "n") == 10**7


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 2.0**40])
def test_fields_pulsar_declares_int_must_fit_32_bits(value):
    with pytest.raises(RowProblem, match="within 32 bits"):
        integer({"n": value}, "n", "n", nonneg=False, bits=32)
    assert integer({"n": 2**31 - 1}, "n", "n", bits=32) == 2**31 - 1


def test_a_producer_count_beyond_java_int_is_a_row_problem_not_a_crash():
    ok = {"msgRateIn": 1, "msgRateOut": 1, "msgThroughputIn": 1, "msgThroughputOut": 1}
    doc = {"t/ns": {"0x00000000_0xffffffff": {"persistent": {"persistent://t/ns/a": {**ok, "producerCount": 2**40},
                                                             "persistent://t/ns/b": {**ok, "producerCount": 3}}}}}
    rows, problems = topics.parse_topic_stats(doc, "broker-1:8080")
    assert [r["topic"] for r in rows] == ["persistent://t/ns/b"]
    assert [p.field for p in problems] == ["t/ns.0x00000000_0xffffffff.persistent[persistent://t/ns/a].producerCount"]


@pytest.mark.parametrize("value", [0, 7, -1, 2**31 - 1, 2**31, 2**63, 1.5, 1e7, -0.0, 1e308, float("inf"), True, "1",
                                   None, [], {}])
def test_a_topics_numbers_read_as_the_field_readers_read_them_whatever_their_kind(value):
    """The topic parser takes the usual values as they are (2.4 million topics a day on M): every other value must
    come out as ``num`` and ``integer`` read it, converted or refused with the same problem."""
    fields = {"msgRateIn": (num, {}), "producerCount": (integer, {"required": False, "bits": 32}),
              "averageMsgSize": (num, {"required": False}), "backlogSize": (integer, {"required": False, "nonneg": False}),
              "storageSize": (integer, {"required": False})}
    for key, (reader, options) in fields.items():
        stats = {"msgRateIn": 1.0, "msgRateOut": 2, "msgThroughputIn": 3.0, "msgThroughputOut": 4.0, key: value}
        doc = {"t/ns": {"0x00000000_0xffffffff": {"persistent": {"persistent://t/ns/a": stats}}}}
        rows, problems = topics.parse_topic_stats(doc, "b:8080")
        name = f"t/ns.0x00000000_0xffffffff.persistent[persistent://t/ns/a].{key}"
        try:
            expected = reader(stats, key, name, **options)
        except RowProblem as exc:
            assert (rows, problems) == ([], [exc.problem]), (key, value)
            continue
        column = {"msgRateIn": "msg_rate_in", "producerCount": "producer_count", "averageMsgSize": "average_msg_size",
                  "backlogSize": "backlog_size", "storageSize": "storage_size"}[key]
        got = rows[0][column]
        expected = 0 if key == "producerCount" and expected is None else expected
        assert (got, type(got), rows[0]["msg_rate_out"], problems) == (expected, type(expected), 2.0, []), (key, value)


@pytest.mark.parametrize("bad, field", [
    ({"primary": ["a{99999999999}"]}, "bad.primary"),  # OverflowError from re.compile
    ({"primary": ["(" * 5000 + ")" * 5000]}, "bad.primary"),  # RecursionError from re.compile
    ({"primary": ["b"], "secondary": [r"(s)\1"]}, "bad.secondary"),  # a backreference: no linear-time match
    ({"primary": ["b"], "auto_failover_policy": {"parameters": {"min_limit": float("inf")}}},  # 1e999 in the JSON
     "bad.auto_failover_policy.parameters.min_limit"),
    ({"primary": ["b"], "auto_failover_policy": {"parameters": [1]}}, "bad.auto_failover_policy.parameters"),
    ({"primary": ["b"], "auto_failover_policy": []}, "bad.auto_failover_policy"),
])
def test_an_isolation_policy_python_cannot_compile_is_a_row_problem(bad, field):
    rows, problems = cluster.parse_isolation_policies({"good": {"namespaces": ["a/b"], "primary": ["b.*"]},
                                                       "bad": {"namespaces": ["x/y"], **bad}})
    assert [r["key"] for r in rows] == ["good"] and [p.field for p in problems] == [field]


def test_an_isolation_regex_that_only_backtracks_badly_lands_and_one_that_must_backtrack_does_not():
    rows, problems = cluster.parse_isolation_policies({"slow": {"namespaces": ["(a|a)*b"], "primary": ["(.*)*x"]},
                                                       "backref": {"namespaces": ["x/y"], "primary": [r"(a)\1"]}})
    assert [r["key"] for r in rows] == ["slow"]
    assert [(p.field, p.reason) for p in problems] == [
        ("backref.primary", r"expected a regex matchable in linear time, got '(a)\\1' (a backreference)")]


def test_booleans_read_as_jackson_coerces_them():
    assert boolean({"b": "false"}, "b", "b", True) is False and boolean({"b": " TRUE "}, "b", "b", False) is True
    assert boolean({}, "b", "b", True) is True
    for bad in ("maybe", 0, [True]):
        with pytest.raises(RowProblem, match="true or false"):
            boolean({"b": bad}, "b", "b", True)


@pytest.mark.parametrize("value, kind", [(7, "a number"), (0.5, "a number"), (0, "a number"), ("", "a string"),
                                         ([], "an array"), (False, "a boolean")])
def test_a_value_of_the_wrong_kind_is_a_row_problem_named_in_jsons_words(value, kind):
    """A topic's ``subscriptions`` given as 7 says "got a number", not Python's "int"; an empty wrong kind (0, [])
    is as wrong as a full one (Jackson refuses both for a map)."""
    stats = {"msgRateIn": 1.0, "msgRateOut": 0.0, "msgThroughputIn": 1.0, "msgThroughputOut": 0.0}
    doc = {"acme/orders": {"0x00000000_0xffffffff": {"persistent": {
        "persistent://acme/orders/a": stats, "persistent://acme/orders/b": {**stats, "subscriptions": value}}}}}
    rows, problems = topics.parse_topic_stats(doc, "b:8080")
    assert [r["topic"] for r in rows] == ["persistent://acme/orders/a"]
    assert [(p.field.rsplit(".", 1)[-1], p.reason) for p in problems] == [("subscriptions", f"expected an object, got {kind}")]


@pytest.mark.parametrize("consumers, rows", [(None, 1), ([{}, {}], 1), ({}, 0), (0, 0)])
def test_a_subscriptions_consumers_are_an_array_or_absent(consumers, rows):
    stats = {"msgRateIn": 1.0, "msgRateOut": 0.0, "msgThroughputIn": 1.0, "msgThroughputOut": 0.0,
             "subscriptions": {"s": {} if consumers is None else {"consumers": consumers}}}
    got, problems = topics.parse_topic_stats({"acme/orders": {"0x00000000_0xffffffff": {"persistent": {
        "persistent://acme/orders/a": stats}}}}, "b:8080")
    assert len(got) == rows and [r["consumer_count"] for r in got] == [len(consumers or [])] * rows
    assert [p.field.endswith("subscriptions[s].consumers") for p in problems] == [True] * (1 - rows)


def test_manifest_completeness_and_cluster_are_read_not_assumed():
    base = {"formatVersion": 1, "cluster": "c", "snapshotTimestampMs": 0, "brokers": ["b:8080"]}
    (row,), _ = cluster.parse_manifest({**base, "complete": "false"})
    assert row["complete"] is False and row["manifest_cluster"] == "c"
    rows, problems = cluster.parse_manifest({**base, "complete": "maybe"})
    assert not rows and problems[0].field == "complete"


def test_a_broker_the_manifest_repeats_is_kept_once_in_its_order_and_the_repeat_named():
    base = {"formatVersion": 1, "cluster": "c", "snapshotTimestampMs": 0}
    (row,), (problem,) = cluster.parse_manifest({**base, "brokers": ["b:1", "a:1", "b:1", "b:1", "a:1"]})
    assert row["brokers"] == ["b:1", "a:1"] and problem.field == "brokers" and not problem.whole_file
    assert "'b:1' 3 times, 'a:1' 2 times" in problem.reason
    assert cluster.parse_manifest({**base, "brokers": ["b:1", "a:1"]})[1] == []


def test_every_parser_turns_random_junk_into_problems_only():
    """Fuzz: any JSON value anywhere in any parser gives rows and problems, never an exception."""
    import random

    rng = random.Random(7)
    junk = [None, True, 0, -1, 1e308, float("inf"), "x", "", [], [1, "a"], {}, {"a": {"b": []}}, 2**70, 10**400]
    parsers = [lambda d: brokers.parse_local_broker_data(d, "b:1"), lambda d: brokers.parse_bundle_data(d, "a/b/0x00000000_0xffffffff"),
               lambda d: topics.parse_topic_stats(d, "b:1"), lambda d: topics.parse_ownership(d, "b:1"),
               lambda d: cluster.parse_manifest(d), lambda d: cluster.parse_namespace(d, "a/b"),
               lambda d: cluster.parse_config(d, "dynamic"), lambda d: cluster.parse_failure_domains(d),
               lambda d: cluster.parse_isolation_policies(d),
               lambda d: brokers.parse_resource_quota(d, "a/b/0x00000000_0xffffffff")]
    sample = {"msgRateIn": 1.0, "lastStats": {"a/b/0x00000000_0xffffffff": {"msgRateIn": 1.0}},
              "a/b": {"0x00000000_0xffffffff": {"persistent": {"persistent://a/b/t": {"subscriptions": {"s": {}}}}}},
              "zone": {"brokers": ["b:1"]}, "bundles": {"boundaries": ["0x00000000", "0xffffffff"]}}

    def mutate(value, depth=0):
        if isinstance(value, dict) and depth < 4:
            return {k: (rng.choice(junk) if rng.random() < 0.3 else mutate(v, depth + 1)) for k, v in value.items()}
        return rng.choice(junk) if rng.random() < 0.3 else value

    for _ in range(400):
        doc = mutate(sample) if rng.random() < 0.8 else rng.choice(junk)
        for parse in parsers:
            try:
                rows, problems, *_ = parse(doc)
            except (FileProblem, RowProblem):
                continue
            assert all(isinstance(p.reason, str) and p.reason for p in problems)
            json.dumps(rows, default=str)



def test_a_parser_failing_on_a_file_quarantines_the_file_and_names_the_error():
    """A parser bug that hostile input finds must not stop the night: the file is quarantined with the error."""
    from dataclasses import replace

    from lb_pipeline.ingest.files import parse_file
    from lb_pipeline.ingest.tables import TABLES

    broken = replace(TABLES["ownership"], parse=lambda doc, rel: 1 / 0)
    good, bad = parse_file(broken, "file:/l/c/2026-01-15T00-00-00Z/ownership/b_8080.json", b"{}")
    assert good == [] and [(q["field"], q["bronze_table"]) for q in bad] == [("(file)", "ownership")]
    assert "ZeroDivisionError" in bad[0]["reason"] and bad[0]["raw"] == "{}"


def test_half_a_surrogate_pair_quarantines_its_row_and_the_others_land():
    """``"\\ud800"`` alone is valid JSON, but no UTF-8 text can hold it: its row goes to the quarantine (storable
    text naming the column and the value), the file's other rows land, and every stored string encodes."""
    from lb_pipeline.ingest.files import parse_file
    from lb_pipeline.ingest.tables import TABLES

    stats = '{"msgRateIn": 1, "msgRateOut": 1, "msgThroughputIn": 1, "msgThroughputOut": 1}'
    content = ('{"t/ns": {"0x00000000_0xffffffff": {"persistent": {"persistent://t/ns/a\\ud800": ' + stats +
               ', "persistent://t/ns/b\\ud83d\\ude00": ' + stats + '}}}}').encode()  # the second: a whole pair
    good, bad = parse_file(TABLES["topic_stats"], "file:/l/c/2026-01-15T00-00-00Z/topics/b_8080.json", content)
    assert [r["topic"] for r in good] == ["persistent://t/ns/b\U0001F600"]
    assert [q["field"] for q in bad] == ["topic"] and "persistent://t/ns/a\\\\ud800" in bad[0]["reason"]
    json.dumps([*good, *bad], default=str, ensure_ascii=False).encode("utf-8")


def test_the_policy_map_holds_what_ingest_would_land_and_names_the_rest():
    policies, problems = cluster.isolation_policy_map({"ok": {"namespaces": ["a/b"], "primary": ["b.*"]},
                                                       "backref": {"namespaces": ["x/y"], "primary": [r"(a)\1"]}})
    assert policies == {"ok": {"namespaces": ["a/b"], "primary": ["b.*"]}}
    assert [p.field for p in problems] == ["backref.primary"]
    assert cluster.isolation_policy_map("not an object") == ({}, [Problem("(root)", "expected a JSON object, got a string", True)])


@pytest.mark.parametrize("value", ["85%", "", None, "1e400", "NaN", "0x55", "85.5", "85.0", "2147483648"])
def test_a_load_balancer_number_pulsar_cannot_convert_is_a_row_problem_and_the_rest_lands(value):
    key = "loadBalancerBrokerOverloadedThresholdPercentage"
    rows, problems = cluster.parse_config({key: value, "loadBalancerSheddingEnabled": "yes", "clusterName": "x",
                                           "maxUnloadPercentage": "Optional[0.3]"}, "dynamic")
    assert [(p.field, p.whole_file) for p in problems] == [(key, False)]
    assert "Pulsar's default is 85" in problems[0].reason
    assert {r["key"]: r["value"] for r in rows} == {"loadBalancerSheddingEnabled": "yes", "clusterName": "x",
                                                    "maxUnloadPercentage": "Optional[0.3]"}


def test_isolation_policies_keep_the_order_pulsar_matches_them_in():
    # Pulsar applies the first policy, in the stored document's order, whose namespace regex matches
    doc = {"zeta": {"namespaces": ["t/.*"], "primary": ["z"]}, "alpha": {"namespaces": ["t/a"], "primary": ["a"]},
           "mid": {"namespaces": ["t/m"], "primary": ["m"]}}
    rows, problems = cluster.parse_isolation_policies(doc)
    assert not problems and [(r["key"], r["position"]) for r in rows] == [("zeta", 0), ("alpha", 1), ("mid", 2)]
    assert list(cluster.isolation_policy_map(doc)[0]) == ["zeta", "alpha", "mid"]
