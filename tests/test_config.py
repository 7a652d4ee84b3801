import pytest

from lb_pipeline.model.config import PROFILES, PulsarConfig, config_from_snapshot, load_broker_conf


def test_defaults_follow_the_released_profile():
    c = PulsarConfig()
    assert c.get_int("loadBalancerBrokerOverloadedThresholdPercentage") == 85
    assert c.get_float("loadBalancerHistoryResourcePercentage") == 0.9
    assert c["loadBalancerLoadSheddingStrategy"].endswith("ThresholdShedder")
    assert c.get_list("supportedNamespaceBundleSplitAlgorithms")[1] == "topic_count_equally_divide"


def test_profiles_differ_where_pulsar_changed_defaults():
    assert PulsarConfig(profile="pulsar-3.0").get_float("loadBalancerDirectMemoryResourceWeight") == 1.0
    newest = PulsarConfig(profile="pulsar-master-2026")
    assert newest["loadBalancerLoadSheddingStrategy"].endswith("AvgShedder")
    assert newest.get_float("maxUnloadPercentage") == 0.5
    assert not newest.get_bool("loadBalancerDistributeBundlesEvenlyEnabled")


def test_unknown_profile_is_named_in_the_error():
    with pytest.raises(ValueError, match="pulsar-9"):
        PulsarConfig(profile="pulsar-9")


def test_broker_conf_file_overrides_defaults(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("# comment\nloadBalancerBrokerOverloadedThresholdPercentage=70\n"
                    "loadBalancerSheddingEnabled = false\nclusterName=prod\n")
    c = load_broker_conf(conf)
    assert c.get_int("loadBalancerBrokerOverloadedThresholdPercentage") == 70
    assert c.get_bool("loadBalancerSheddingEnabled") is False
    assert c["clusterName"] == "prod"


def test_dynamic_config_wins_over_runtime():
    c = config_from_snapshot({"maxUnloadPercentage": "0.3"}, {"maxUnloadPercentage": "0.4"})
    assert c.get_float("maxUnloadPercentage") == 0.4


def test_a_malformed_value_names_the_key():
    c = PulsarConfig({"minUnloadMessage": "lots"})
    with pytest.raises(ValueError, match="minUnloadMessage.*'lots'"):
        c.get_int("minUnloadMessage")


def test_every_profile_has_the_same_keys():
    keys = {frozenset(p) for p in PROFILES.values()}
    assert len(keys) == 1


def test_runtime_config_values_printed_by_java_are_read_back():
    # what `brokers get-runtime-config` returned on a real 4.0.7 broker
    config = PulsarConfig({"loadBalancerOverrideBrokerNicSpeedGbps": "Optional[10.0]",
                           "loadBalancerSheddingExcludedNamespaces": "[public/a, public/b]",
                           "brokerClientTlsProtocols": "[]", "loadBalancerBrokerOverloadedThresholdPercentage": "95"})
    assert config.get_float("loadBalancerOverrideBrokerNicSpeedGbps") == 10.0
    assert config.get_list("loadBalancerSheddingExcludedNamespaces") == ["public/a", "public/b"]
    assert config["brokerClientTlsProtocols"] == "" and config.get_int("loadBalancerBrokerOverloadedThresholdPercentage") == 95
    assert PulsarConfig({"loadBalancerOverrideBrokerNicSpeedGbps": "Optional.empty"})["loadBalancerOverrideBrokerNicSpeedGbps"] == ""


def test_derived_values_are_computed_once_per_configuration():
    from lb_pipeline.algorithms.shedding.common import weights_of

    calls = []
    config = PulsarConfig({"loadBalancerCPUResourceWeight": "2.0"})
    build = lambda c: calls.append(c) or c.get_float("loadBalancerCPUResourceWeight")  # noqa: E731
    assert config.derived("cpu", build) == 2.0 and config.derived("cpu", build) == 2.0
    assert len(calls) == 1
    assert weights_of(config) is weights_of(config) and weights_of(config).cpu == 2.0
    changed = config.overridden(loadBalancerCPUResourceWeight="3.0")  # a new configuration derives afresh
    assert changed.derived("cpu", build) == 3.0 and weights_of(changed).cpu == 3.0 and len(calls) == 2


def test_an_infinite_integer_is_a_malformed_value_not_an_overflow():
    with pytest.raises(ValueError, match="minUnloadMessage.*'1e400'"):
        PulsarConfig({"minUnloadMessage": "1e400"}).get_int("minUnloadMessage")


@pytest.mark.parametrize("text, value", [("true", True), ("TRUE", True), ("false", False), ("yes", False), ("1", False)])
def test_booleans_read_as_pulsars_field_parser_reads_them(text, value):
    assert PulsarConfig({"loadBalancerSheddingEnabled": text}).get_bool("loadBalancerSheddingEnabled") is value


@pytest.mark.parametrize("key, text, value", [
    # int fields: Integer.valueOf of the trimmed text
    ("loadBalancerBrokerOverloadedThresholdPercentage", " 90 ", 90),
    ("loadBalancerBrokerOverloadedThresholdPercentage", "+90", 90),
    ("loadBalancerBrokerOverloadedThresholdPercentage", "85.5", None),
    ("loadBalancerBrokerOverloadedThresholdPercentage", "85.0", None),
    ("minUnloadMessage", "1e3", None),
    ("minUnloadMessage", "1_000", None),
    ("loadBalancerSheddingIntervalMinutes", "2147483647", 2147483647),
    ("loadBalancerSheddingIntervalMinutes", "2147483648", None),
    # long fields: Long.valueOf
    ("loadBalancerSheddingGracePeriodMinutes", "2147483648", 2147483648),
    ("loadBalancerSheddingGracePeriodMinutes", "9223372036854775807", 2 ** 63 - 1),
    ("loadBalancerSheddingGracePeriodMinutes", "9223372036854775808", None),
    # double fields: Double.valueOf, Java's spellings in, Python's own out
    ("maxUnloadPercentage", "0.5", 0.5),
    ("maxUnloadPercentage", "1e30", 1e30),
    ("maxUnloadPercentage", "0.5d", 0.5),
    ("maxUnloadPercentage", ".5F", 0.5),
    ("maxUnloadPercentage", "0x1p-1", 0.5),
    ("maxUnloadPercentage", "0x1", None),
    ("maxUnloadPercentage", "1_0", None),
    ("maxUnloadPercentage", "inf", None),
    ("maxUnloadPercentage", "", None),
])
def test_numbers_convert_as_pulsars_field_parser_converts_the_fields_java_type(key, text, value):
    from lb_pipeline.model.config import value_problem

    config = PulsarConfig({key: text})
    if value is None:
        assert value_problem(key, text).startswith("expected a Java ")
        with pytest.raises(ValueError, match=key):
            config.get_float(key)
    else:
        assert value_problem(key, text) is None
        assert config.get_float(key) == float(value) and type(config.get_float(key)) is float
        if isinstance(value, int):
            assert config.get_int(key) == value


@pytest.mark.parametrize("text, java", [("NaN", "NaN"), ("Infinity", "Infinity"), ("-1e400", "-Infinity")])
def test_a_double_pulsar_takes_as_not_a_number_is_refused_with_what_pulsar_would_run(text, java):
    from lb_pipeline.model.config import value_problem

    assert value_problem("maxUnloadPercentage", text) == (
        f"expected a finite number, got {text!r}: Pulsar would take it as {java}, which no replay reproduces")


def test_an_empty_nic_speed_override_is_pulsars_optional_empty():
    from lb_pipeline.model.config import value_problem

    assert value_problem("loadBalancerOverrideBrokerNicSpeedGbps", "") is None
    assert value_problem("loadBalancerOverrideBrokerNicSpeedGbps", "Optional[25.0]") is None
    assert "Java double" in value_problem("loadBalancerOverrideBrokerNicSpeedGbps", "fast")
    with pytest.raises(ValueError, match="Optional.empty"):
        PulsarConfig().get_float("loadBalancerOverrideBrokerNicSpeedGbps")
    assert PulsarConfig({"loadBalancerOverrideBrokerNicSpeedGbps": "Optional[25.0]"}).get_float(
        "loadBalancerOverrideBrokerNicSpeedGbps") == 25.0
