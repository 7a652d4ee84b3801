"""The report's one decision: stated once at the top, followed by the actions, checked before a wave is proposed."""

from lb_pipeline.report.render import render_nightly
from lb_pipeline.report.waves import check_wave
from tests.test_report import _context


def _decision_sim(**rec):
    base = {"strategy": "UniformLoadShedder", "decision": "change", "rationale": "UniformLoadShedder with the "
            "defaults: load spread 40% below the configured ThresholdShedder", "broker_conf": "x=1",
            "commands": ["pulsar-admin brokers update-dynamic-config --config x --value 1"], "gain": 0.08,
            "gain_low": 0.05, "gain_high": 0.11, "current_imbalance": 0.2, "candidate_imbalance": 0.12,
            "candidate_strategy": "UniformLoadShedder", "nights_agreeing": 3, "nights_seen": 4,
            "worse_than_none": False, "worse_by": None, "baseline_imbalance": 0.25}
    return {**_context()["simulation"], "recommendation": {**base, **rec}, "against_log": None}


def test_the_decision_is_stated_once_at_the_top_and_the_actions_follow_it():
    """One answer: the recommendation is the decision at the top; the moves proposed are the decided strategy's
    (ThresholdShedder configured, UniformLoadShedder decided), and the strategy section points at the decision."""
    html = render_nightly(_context(simulation=_decision_sim()))
    assert html.count('data-testid="recommendation"') == 1
    assert html.index('data-testid="decision"') < html.index('data-testid="actions"')
    decision = html.split('data-testid="decision"')[1].split("</section>")[0]
    assert "<b>Change to UniformLoadShedder.</b>" in decision and "x=1" in decision
    assert "the gain 8.0 points, 90 % interval 5.0 to 11.0" in decision and "on 3 of the last 4 nights" in decision
    assert "not checked against this cluster's own record" in decision
    actions = html.split('data-testid="actions"')[1].split("</section>")[0]
    assert "move bundles as UniformLoadShedder would" in actions and "ThresholdShedder" not in actions
    assert "update-dynamic-config" not in html.split('data-testid="simulation"')[1]  # no second set of commands
    keep = render_nightly(_context(simulation=_decision_sim(decision="keep", strategy=None,
                                                            rationale="within the night's uncertainty")))
    assert "<b>Keep ThresholdShedder.</b>" in keep and "x=1" not in keep
    assert "move bundles as ThresholdShedder would" in keep


def test_a_decision_on_overloaded_broker_minutes_prints_those_minutes_and_their_interval():
    html = render_nightly(_context(simulation=_decision_sim(
        basis="overloaded broker-minutes", current_overloaded=1043.0, candidate_overloaded=41.0, gain=1002.0,
        gain_low=824.0, gain_high=1194.0, current_imbalance=0.115, candidate_imbalance=0.116)))
    (figures,) = html.split('data-testid="decision-figures">')[1:]
    figures = figures.split("</p>")[0]
    assert figures.startswith("Broker-minutes above loadBalancerBrokerOverloadedThresholdPercentage over the night: "
                              "ThresholdShedder as configured 1,043, UniformLoadShedder 41; the gain 1,002 "
                              "broker-minutes, 90 % interval 824 to 1,194")
    assert "11.5% and 11.6%" in figures and "points" not in figures


def test_a_configured_strategy_worse_than_no_balancing_is_said():
    html = render_nightly(_context(simulation=_decision_sim(decision="keep", strategy=None, worse_than_none=True,
                                                            worse_by=0.042, current_imbalance=0.146,
                                                            baseline_imbalance=0.104, rationale="keep")))
    (said,) = html.split('data-testid="worse-than-none">')[1:]
    assert said.startswith("The configured ThresholdShedder spread load 4.2 points worse than leaving ownership "
                           "alone (14.6% against 10.4%)")


def test_a_wave_that_stacks_unsplittable_bundles_or_worsens_the_peak_is_withheld_with_why():
    """The issue's demo: both single-topic hot bundles moved onto one broker that had peaked at 100 %."""
    moves = [{"bundle": "hooli/telemetry/0xe0000000_0xe7ffffff", "source": "broker-1", "destination": "broker-4",
              "why": "w", "command": "pulsar-admin namespaces unload hooli/telemetry --bundle 0xe0000000_0xe7ffffff"},
             {"bundle": "stark/audit/0x20000000_0x40000000", "source": "broker-2", "destination": "broker-4",
              "why": "w", "command": "pulsar-admin namespaces unload stark/audit --bundle 0x20000000_0x40000000"}]
    rates = {"broker-1": 120_000.0, "broker-2": 80_000.0, "broker-4": 30_000.0}
    usage = {"broker-1": 0.95, "broker-2": 0.80, "broker-4": 0.40}
    check = check_wave(moves, rates, usage, {m["bundle"]: 1 for m in moves},
                       {moves[0]["bundle"]: 90_000.0, moves[1]["bundle"]: 50_000.0})
    assert not check["proposed"]
    assert any("single-topic bundles no split can help on broker-4" in w for w in check["why_not"])
    assert any("raise the hottest broker's usage from 95% to" in w for w in check["why_not"])
    assert check["peak_after"] > 1.0
    html = render_nightly(_context(actions={"splits": [], "unloads": moves, "check": check,
                                            "strategy": "ThresholdShedder"}))
    actions = html.split('data-testid="actions"')[1].split("</section>")[0]
    assert 'data-testid="wave-withheld"' in actions and "pulsar-admin" not in actions
    assert "isolate them on separate or bigger brokers, or partition their topics" in actions
    # one move of a many-topic bundle from the hottest broker to the coolest: proposed, with its predicted effect
    fine = check_wave(moves[:1], rates, usage, {moves[0]["bundle"]: 12}, {moves[0]["bundle"]: 40_000.0})
    assert fine["proposed"] and fine["why_not"] == [] and fine["peak_after"] < 0.95
    html = render_nightly(_context(actions={"splits": [], "unloads": moves[:1], "check": fine,
                                            "strategy": "ThresholdShedder"}))
    assert 'data-testid="wave-effect"' in html and moves[0]["command"] in html


def test_a_withheld_move_of_a_one_topic_bundle_says_what_would_help_instead():
    """The multi-night demo: ThresholdShedder would move the one-topic hot bundle off a broker at 100 % onto one at
    7 %, which it would take to 119 %. The wave is withheld, and the reason says what helps a one-topic bundle; a
    many-topic bundle whose move raises the peak gets the reason alone."""
    move = [{"bundle": "hooli/telemetry/0xe0000000_0xe7ffffff", "source": "broker-3", "destination": "broker-2"}]
    rates = {"broker-3": 140_000.0, "broker-2": 4_000.0, "broker-1": 40_000.0}
    usage = {"broker-3": 1.0, "broker-2": 0.07, "broker-1": 0.4}
    rate = {move[0]["bundle"]: 130_000.0}
    (why,) = [w for w in check_wave(move, rates, usage, {move[0]["bundle"]: 1}, rate)["why_not"] if "hottest" in w]
    assert why.startswith("it would raise the hottest broker's usage from 100% to ")
    assert why.endswith("(broker-2): hooli/telemetry/0xe0000000_0xe7ffffff is one topic, which no move or split "
                        "spreads; isolate it on a broker large enough for it, or partition its topic (the finding "
                        "\"hot bundle no split can help\" says how)")
    (plain,) = [w for w in check_wave(move, rates, usage, {move[0]["bundle"]: 40}, rate)["why_not"] if "hottest" in w]
    assert plain.endswith("(broker-2)")


def test_a_broker_without_usable_figures_is_left_out_of_the_waves_prediction_instead_of_failing_it():
    moves = [{"bundle": "t/ns/0x00000000_0x80000000", "source": "hot", "destination": "cool"},
             {"bundle": "t/ns/0x80000000_0xffffffff", "source": "hot", "destination": "blind"}]
    rates = {"hot": 1000.0, "cool": 100.0, "blind": None, "nan": float("nan")}
    usage = {"hot": 0.9, "cool": 0.2, "blind": float("inf"), "nan": None}
    check = check_wave(moves, rates, usage, {m["bundle"]: 4 for m in moves},
                       {moves[0]["bundle"]: 300.0, moves[1]["bundle"]: float("nan")})
    assert [b["broker"] for b in check["brokers"]] == ["cool", "hot"]
    after = {b["broker"]: b["rate_after"] for b in check["brokers"]}
    assert after == {"cool": 400.0, "hot": 700.0} and check["proposed"]


def test_a_move_of_a_bundle_near_the_split_limit_warns_it_may_be_split_on_arrival():
    """The burst record: the leader split 3 of 17 hot bundles moved at 255-345 msg/s under a 380 msg/s limit, at the
    new owner's first report. A proposed wave says which of its bundles may meet that fate; not a bundle of one topic
    (never split), not one far under the limit, and not under the extensible load manager (no split on one report)."""
    moves = [{"bundle": f"t/ns/{b}", "source": "hot", "destination": "cool", "why": "w",
              "command": f"pulsar-admin namespaces unload t/ns --bundle {b}"}
             for b in ("0x00000000_0x40000000", "0x40000000_0x80000000", "0x80000000_0xc0000000")]
    rates, usage = {"hot": 2_000.0, "cool": 200.0}, {"hot": 0.9, "cool": 0.2}
    topics = {moves[0]["bundle"]: 3, moves[1]["bundle"]: 1, moves[2]["bundle"]: 5}
    bundle_rates = {moves[0]["bundle"]: 255.0, moves[1]["bundle"]: 300.0, moves[2]["bundle"]: 100.0}
    check = check_wave(moves, rates, usage, topics, bundle_rates, split_limit=380.0)
    assert check["proposed"] and check["may_split"] == [moves[0]["bundle"]]
    assert check_wave(moves, rates, usage, topics, bundle_rates)["may_split"] == []
    html = render_nightly(_context(actions={"splits": [], "unloads": moves, "check": check,
                                            "strategy": "ThresholdShedder"}))
    (said,) = html.split('data-testid="may-split">')[1:]
    assert said.startswith("May be split on arrival: t/ns/0x00000000_0x40000000. Each carries 40 % or more of "
                           "loadBalancerNamespaceBundleMaxMsgRate=380")
    assert "may-split" not in render_nightly(_context(actions={
        "splits": [], "unloads": moves, "check": {**check, "may_split": []}, "strategy": "ThresholdShedder"}))
