"""``lb-pipeline simulate`` on a landing folder: every strategy against the baselines, a recommendation, clear
errors for bad input."""

from __future__ import annotations

import json
import shutil

from lb_pipeline.cli import main
from tests.conftest import DEMO_DAY


def test_simulate_reports_every_run_and_a_recommendation_as_json(demo_landing, capsys):
    assert main(["simulate", "--landing", str(demo_landing), "--day", DEMO_DAY, "--json"]) == 0
    out = capsys.readouterr()
    result = json.loads(out.out)
    strategies = [r["strategy"] for r in result["runs"]]
    assert strategies == ["no-balancing", "as-recorded", "OverloadShedder", "ThresholdShedder", "UniformLoadShedder",
                          "AvgShedder", "TransferShedder"]
    assert result["snapshots"] == 4 and result["brokers"] >= 6
    assert all(r["cycles"] == 181 and r["grace_violations"] == 0 for r in result["runs"])
    configured = next(r for r in result["runs"] if r["strategy"] == "ThresholdShedder")  # the demo cluster runs it
    rec = result["recommendation"]
    # the spread compared is among the brokers no one-topic bundle pins (the demo day has such brokers)
    assert rec["current_strategy"] == "ThresholdShedder" \
        and rec["current_imbalance"] == configured["usage_std_unpinned_mean"] < configured["usage_std_mean"]
    assert all(r["pinned_broker_minutes"] <= r["overloaded_broker_minutes"] and 0 < r["peak_usage"] for r in result["runs"])
    assert rec["decision"] in ("keep", "change") and (rec["strategy"] is not None) == (rec["decision"] == "change")
    if rec["candidate_strategy"]:  # measured against the configured strategy, with the night's uncertainty
        chosen = next(r for r in result["runs"] if r["strategy"] == rec["candidate_strategy"])
        assert chosen["usage_std_unpinned_mean"] <= configured["usage_std_unpinned_mean"] - 0.01
        assert chosen["overloaded_broker_minutes"] <= configured["overloaded_broker_minutes"]
        assert chosen["peak_usage"] <= configured["peak_usage"] + 0.01
        assert rec["gain_low"] is not None and rec["gain_low"] <= rec["gain"] <= rec["gain_high"]
    assert any("interpolated linearly between snapshots" in n for n in result["notes"])
    assert "[7/7] TransferShedder" in out.err and "181/181 cycles" in out.err  # the progress bar


def test_simulate_text_lists_runs_fewest_overloaded_minutes_first(demo_landing, capsys):
    assert main(["simulate", "--landing", str(demo_landing), "--day", DEMO_DAY, "--quiet",
                 "--strategy", "ThresholdShedder", "--set", "loadBalancerSheddingGracePeriodMinutes=5"]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    table = out.out.split("\n\n")[1].splitlines()
    assert table[0].startswith("run") and len(table) == 4
    minutes = [int(line[72:87]) for line in table[1:]]  # the "overloaded min" column
    assert minutes == sorted(minutes)
    assert "\ndecision: " in out.out and "\nwhy: " in out.out


def test_simulate_names_what_is_wrong(demo_landing, tmp_path, capsys):
    assert main(["simulate", "--landing", str(demo_landing), "--day", "2031-01-01"]) == 2
    assert "0 snapshot(s) on 2031-01-01" in capsys.readouterr().err
    assert main(["simulate", "--landing", str(demo_landing), "--day", DEMO_DAY, "--set", "loadBalancerFoo=1"]) == 2
    assert "unknown Pulsar configuration key(s) loadBalancerFoo" in capsys.readouterr().err
    assert main(["simulate", "--landing", str(demo_landing), "--day", DEMO_DAY, "--strategy", "NoShedder"]) == 2
    assert "unknown strategy 'NoShedder'" in capsys.readouterr().err
    assert main(["simulate", "--day", DEMO_DAY]) == 2
    assert "--landing FOLDER or --lake ROOT" in capsys.readouterr().err
    # a broken load report is left out and named; the rest of the day is simulated
    landing = tmp_path / "landing"
    shutil.copytree(demo_landing, landing)
    victim, array = sorted(landing.glob("*/*/lb/brokers/*.json"))[:2]
    victim.write_text("{not json")
    array.write_text("[]")  # valid JSON of the wrong kind: the whole file is left out, as ingest quarantines it
    for topics in sorted(landing.glob("*/*/topics/*.json")):  # the topic files the simulated splits read
        topics.write_text("[1]")
    # an isolation policy only a backtracking engine could match is left out and named; one whose regexes
    # backtrack catastrophically ((.|.|.|.|.|.)*x against every namespace and broker host) is applied, and the
    # day still simulates
    policies = sorted(landing.glob("*/*/manifest.json"))[1].parent / "cluster/isolation-policies.json"
    policies.write_text(json.dumps({"slow": {"namespaces": ["(.|.|.|.|.|.)*x"], "primary": ["(.|.|.|.|.|.)*x"]},
                                    "backref": {"namespaces": ["x/y"], "primary": ["(a)\\1"]}}))
    # a dynamic value Pulsar cannot convert in the last snapshot's configuration is left out, as Pulsar leaves it
    dynamic = sorted(landing.glob("*/*/manifest.json"))[-1].parent / "config/dynamic.json"
    dynamic.write_text(json.dumps({"loadBalancerBrokerOverloadedThresholdPercentage": "85%"}))
    # a snapshot whose load reports were all lost: the history skips it, and says so
    bare = sorted(landing.glob("*/*/manifest.json"))[2].parent
    shutil.rmtree(bare / "lb/brokers")
    assert main(["simulate", "--landing", str(landing), "--day", DEMO_DAY, "--json", "--quiet"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any(n.startswith(f"{dynamic}: field 'loadBalancerBrokerOverloadedThresholdPercentage'") for n in notes)
    assert any(str(victim) in n and "left out" in n for n in notes)
    assert f"{array}: (root): expected a JSON object, got an array; left out" in notes
    assert f"{bare}: no broker load report; the history goes from the snapshot before to the one after" in notes
    assert any("/topics/" in n and "expected a JSON object, got an array; left out" in n for n in notes)
    assert [n for n in notes if str(policies) in n] == [
        f"{policies}: backref.primary: expected a regex matchable in linear time, got '(a)\\\\1' (a backreference); "
        "left out"]


def test_a_cadence_past_the_day_is_one_cycle_and_one_pulsar_cannot_convert_is_refused(demo_landing, capsys):
    """A billion minutes between cycles once asked for a billion decay factors: the run never ended. The cadence is
    a Java int: Pulsar converts neither a fraction nor a number past 2^31-1, and neither does ``--set``."""
    args = ["simulate", "--landing", str(demo_landing), "--day", DEMO_DAY, "--json", "--quiet", "--strategy",
            "ThresholdShedder", "--set"]
    assert main([*args, "loadBalancerSheddingIntervalMinutes=1000000000"]) == 0
    assert {r["cycles"] for r in json.loads(capsys.readouterr().out)["runs"]} == {1}
    for value in ("1e30", "0.5", "2147483648"):
        assert main([*args, f"loadBalancerSheddingIntervalMinutes={value}"]) == 2
        assert capsys.readouterr().err == (
            f"lb-pipeline: --set: loadBalancerSheddingIntervalMinutes: expected a Java int (a whole number from -2^31 "
            f"to 2^31-1; Pulsar's default is 1), got '{value}'\n")


def test_simulate_says_when_the_brokers_fell_back_to_the_deprecated_load_manager(demo_landing, capsys):
    """AvgShedder placement beside ThresholdShedder: ModularLoadManagerImpl does not start, the brokers run
    SimpleLoadManagerImpl, and the as-recorded run (which follows the configuration) moves nothing."""
    avg = "org.apache.pulsar.broker.loadbalance.impl.AvgShedder"
    assert main(["simulate", "--landing", str(demo_landing), "--day", DEMO_DAY, "--quiet", "--json",
                 "--strategy", "ThresholdShedder", "--set", f"loadBalancerLoadPlacementStrategy={avg}"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert any(n.startswith("the brokers run SimpleLoadManagerImpl, Pulsar's deprecated load manager (ModularLoadManagerImpl "
                            "cannot start: loadBalancerLoadPlacementStrategy AvgShedder") for n in result["notes"])
    recorded = next(r for r in result["runs"] if r["strategy"] == "as-recorded")
    assert recorded["unloads"] == 0
    assert main(["simulate", "--landing", str(demo_landing), "--day", DEMO_DAY, "--quiet", "--json",
                 "--strategy", "ThresholdShedder"]) == 0
    assert not any("SimpleLoadManagerImpl" in n for n in json.loads(capsys.readouterr().out)["notes"])
