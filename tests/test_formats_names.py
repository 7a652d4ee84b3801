"""Names in Pulsar's documents, checked as Pulsar checks them: topic names, namespaces, broker ids and bundle ranges
as ``NamespaceBundle`` prints them. A name Pulsar would refuse or spell otherwise is a problem naming its field."""

import pytest

from lb_pipeline.formats import brokers, cluster, topics


def test_a_topic_rows_namespace_is_what_topicname_reads_for_any_local_name():
    """The parser takes the namespace it checked for a one-part local name without parsing the topic again: on
    every local name of a few awkward characters it keeps exactly the topics ``topic_namespace`` (TopicName) reads
    as of that namespace, v1 and v2, both domains."""
    import itertools

    from lb_pipeline.model.bundles import topic_namespace

    stats = {"msgRateIn": 1.0, "msgRateOut": 0.0, "msgThroughputIn": 1.0, "msgThroughputOut": 0.0}
    chars = ["a", "0", "/", " ", "\u00a0", "\u2003", "\t", "\x1c", "é", ""]
    locals_ = sorted({"".join(p) for n in range(4) for p in itertools.product(chars, repeat=n)})
    for namespace, domain in itertools.product(["acme/orders", "acme/c1/orders"], ["persistent", "non-persistent"]):
        names = [f"{domain}://{namespace}/{local}" for local in locals_]
        rows, _ = topics.parse_topic_stats({namespace: {"0x00000000_0xffffffff": {domain: {
            n: stats for n in names}}}}, "b:8080")

        def pulsar_reads(name):
            try:
                return topic_namespace(name)
            except ValueError:
                return None

        assert {r["topic"] for r in rows} == {n for n in names if pulsar_reads(n) == namespace}


def test_topic_names_follow_pulsars_topic_name_rule():
    stats = {"msgRateIn": 1.0, "msgRateOut": 0.0, "msgThroughputIn": 1.0, "msgThroughputOut": 0.0}
    names = ["persistent://acme/orders/t-1", "persistent://acme/orders/\u00a0",  # a no-break space is a name in Java
             "persistent://acme/orders/", "persistent://acme/orders/ \t", "persistent://acme/orders/\r",
             "persistent://acme/orders/a/b"]  # four parts: a v1 name, of namespace acme/orders/a
    rows, problems = topics.parse_topic_stats({"acme/orders": {"0x00000000_0xffffffff": {"persistent": {
        n: stats for n in names}}}}, "b:8080")
    assert [r["topic"] for r in rows] == names[:2]
    reasons = {p.field.split("[", 1)[1][:-1]: p.reason for p in problems}  # field: namespace.range.domain[topic]
    assert len(problems) == 4 and all("the topic's local name must not be blank" in reasons[n] for n in names[2:5])
    assert reasons[names[5]] == ("expected a topic of namespace acme/orders; Pulsar reads "
                                 "'persistent://acme/orders/a/b' as one of 'acme/orders/a'")


def test_a_topic_reported_under_another_namespace_is_a_row_problem_and_the_others_land():
    doc = {"acme/orders": {"0x00000000_0xffffffff": {"persistent": {
        "persistent://acme/orders/a": {"msgRateIn": 1.0, "msgRateOut": 0.0, "msgThroughputIn": 1.0, "msgThroughputOut": 0.0},
        "persistent://evil/other/b": {"msgRateIn": 1.0, "msgRateOut": 0.0, "msgThroughputIn": 1.0, "msgThroughputOut": 0.0},
    }}}}
    rows, problems = topics.parse_topic_stats(doc, "b:8080")
    assert [r["topic"] for r in rows] == ["persistent://acme/orders/a"]
    assert len(problems) == 1 and "persistent://evil/other/b" in problems[0].field


@pytest.mark.parametrize("spelling, printed", [
    ("0X80000000_0X90000000", "0x80000000_0x90000000"), ("0x80000000_0x9000000A", "0x80000000_0x9000000a"),
    ("0x080000000_0x090000000", "0x80000000_0x90000000"), (" 0x80000000_0x90000000", "0x80000000_0x90000000"),
    ("0x8000000_0x9000000", "0x08000000_0x09000000")])
def test_a_bundle_range_pulsar_reads_but_never_prints_is_a_row_problem_in_every_file_that_names_bundles(spelling, printed):
    stats = {"msgRateIn": 1.0, "msgRateOut": 0.0, "msgThroughputIn": 1.0, "msgThroughputOut": 0.0}
    for rng, lands in ((printed, True), (spelling, False)):
        topic_rows, topic_problems = topics.parse_topic_stats(
            {"acme/orders": {rng: {"persistent": {"persistent://acme/orders/t": stats}}}}, "b:8080")
        own_rows, own_problems = topics.parse_ownership({f"acme/orders/{rng}": {"is_active": True}}, "b:8080")
        report = {**stats, "lastStats": {f"acme/orders/{rng}": stats}}
        *_, stat_rows, stat_problems = brokers.parse_local_broker_data(report, "b:8080")
        average = {**stats, "numSamples": 1, "maxSamples": 10}
        data_rows, data_problems = brokers.parse_bundle_data({"shortTermData": average, "longTermData": average},
                                                             f"acme/orders/{rng}")
        assert [bool(topic_rows), bool(own_rows), bool(stat_rows), bool(data_rows)] == [lands] * 4, rng
        for problems in ([] if lands else (topic_problems, own_problems, stat_problems, data_problems)):
            assert len(problems) == 1 and (rng in problems[0].field or problems is data_problems)
            assert f"as Pulsar prints it (0x%08x_0x%08x, lower case), '{printed}', got {rng!r}" in problems[0].reason


def test_names_pulsar_forbids_are_refused():
    doc = {"bundles": {"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1}}
    assert cluster.parse_namespace(doc, "acme/orders")[0]
    rows, problems = cluster.parse_namespace({**doc, "namespace": "bad name;rm -rf ~/x"}, "acme/orders")
    assert not rows and "NamedEntity" in problems[0].reason
    manifest = {"formatVersion": 1, "cluster": "c", "snapshotTimestampMs": 0, "brokers": ["../../etc"]}
    rows, problems = cluster.parse_manifest(manifest)
    assert not rows and problems[0].field == "brokers"
    report = {"msgRateIn": 0, "msgRateOut": 0, "msgThroughputIn": 0, "msgThroughputOut": 0,
              "lastStats": {"x/y/0xZZ_0x10": {}}}
    broker_rows, _, stat_rows, stat_problems = brokers.parse_local_broker_data(report, "b:1")
    assert broker_rows and not stat_rows and "0xZZ_0x10" in stat_problems[0].field


def test_brokers_share_a_host_when_their_host_names_differ_only_in_case():
    """DNS names carry no case (RFC 4343): ``BROKER-0.pulsar.svc:8081`` runs on the host of ``broker-0.pulsar.svc:8080``
    and reports its CPU and NIC too; another host, or one broker alone on its host, is not shared."""
    from lb_pipeline.model.names import shared_hosts

    assert shared_hosts(["broker-0.pulsar.svc:8080", "BROKER-0.pulsar.svc:8081", "broker-1.pulsar.svc:8080"]) == {
        "broker-0.pulsar.svc": ["BROKER-0.pulsar.svc:8081", "broker-0.pulsar.svc:8080"]}
    assert shared_hosts(["a:1", "b:1", "a:1"]) == {}
