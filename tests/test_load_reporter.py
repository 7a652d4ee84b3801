"""A broker's ``BrokerLoadDataReporter`` (``model/load_reporter.py``): what reaches the store TransferShedder reads."""

import math

from lb_pipeline.algorithms.shedding.transfer_inputs import DerivedLoadState, derive_from_modular
from lb_pipeline.algorithms.shedding.transfer_shedder import TransferShedder
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.load_reporter import LoadDataReporter, percent_change
from tests.test_shedding_held import MINUTE, _transfer_reports

SECOND = 1000
T0 = 1_768_435_200_000  # 2026-01-15T00:00Z: a clock's time (Pulsar reads 0 as "never")


def _inputs(cpu: float, rate: float = 1000.0, bundles: int = 4) -> tuple:
    usage = {"cpu": (cpu, 100.0), "memory": (0.0, 100.0), "directMemory": (0.0, 100.0),
             "bandwidthIn": (0.0, 100.0), "bandwidthOut": (0.0, 100.0)}
    return usage, 1e6, 0.0, rate, 0.0, bundles, 10


def test_a_jump_reaches_the_store_one_step_in_and_the_rest_only_at_the_next_timed_write():
    config, reporter = PulsarConfig(), LoadDataReporter()
    h = config.get_float("loadBalancerHistoryResourcePercentage")
    reporter.report(_inputs(20), config, T0)  # written at once: never written before
    assert reporter.stored["weightedMaxEMA"] == reporter.local.weightedMax
    start = T0 + 10 * MINUTE
    stored = reporter.report(_inputs(20), config, start)
    ema = stored["weightedMaxEMA"]
    after = reporter.report(_inputs(90), config, start + MINUTE)  # max usage +70 points: written at the first run
    jumped = reporter.local.weightedMax
    assert after["weightedMaxEMA"] == ema * h + (1 - h) * jumped and after["updatedAt"] == start + 5 * SECOND
    # the local average steps every 5 s; the store keeps the first step until 15 min after that write
    written = start + 5 * SECOND
    expected = after["weightedMaxEMA"]
    for now in range(start + 2 * MINUTE, written + 15 * MINUTE, MINUTE):
        assert reporter.report(_inputs(90), config, now) is after or reporter.stored == after
    assert reporter.stored["weightedMaxEMA"] == after["weightedMaxEMA"]
    later = reporter.report(_inputs(90), config, written + 16 * MINUTE)
    for _ in range((15 * MINUTE) // (5 * SECOND) + 1):  # the runs after the write, up to the next
        expected = expected * h + (1 - h) * jumped
    assert later["updatedAt"] == written + 15 * MINUTE + 5 * SECOND and later["weightedMaxEMA"] == expected


def test_a_change_is_written_only_past_the_threshold_percentage():
    config, reporter = PulsarConfig(), LoadDataReporter()
    reporter.report(_inputs(20, rate=1000.0), config, T0)
    first = reporter.stored
    assert reporter.report(_inputs(20, rate=1090.0), config, T0 + MINUTE) is first  # +9 % message rate
    assert reporter.report(_inputs(20, rate=1210.0), config, T0 + 2 * MINUTE) is not first  # +21 % of the written 1000
    assert percent_change(0.0, 0.0) == 0.0 and math.isinf(percent_change(0.0, 1.0))


def test_a_bundle_moving_clears_the_data_and_the_next_run_writes_it_again_seeded():
    config, reporter = PulsarConfig(), LoadDataReporter()
    for now in (T0, T0 + MINUTE, T0 + 2 * MINUTE):
        reporter.report(_inputs(20 + 30 * (now > T0)), config, now)
    assert reporter.stored["weightedMaxEMA"] != reporter.local.weightedMax  # smoothed
    reporter.clear(T0 + 2 * MINUTE)
    assert reporter.stored is None
    stored = reporter.report(_inputs(50), config, T0 + 2 * MINUTE + 5 * SECOND)
    assert stored["weightedMaxEMA"] == reporter.local.weightedMax  # seeded again, not smoothed
    reporter.clear(T0 + 2 * MINUTE + 7 * SECOND)  # removed at most once every 10 s
    assert reporter.stored is stored


def test_transfer_shedder_waits_for_data_written_after_its_cool_down_which_a_held_load_writes_only_when_timed():
    config, reports = PulsarConfig(), _transfer_reports()
    delay = config.get_int("loadBalanceSheddingDelayInSeconds") * SECOND
    shedder, derived = TransferShedder(), DerivedLoadState()

    def cycle(now):
        result = shedder.run_cycle(derive_from_modular(reports, config, now, derived), config, now)
        for u in result.unloads:
            derived.changed((u.broker, u.destination), now)
        return result

    unloaded = next(now for now in range(T0, T0 + 60 * MINUTE, MINUTE) if cycle(now).unloads)
    rewritten = unloaded + 5 * SECOND  # the first run after the unload writes the cleared data again
    # the next write of an unchanged load is the timed one, 15 min on: until then the source broker cools down
    for now in range(unloaded + MINUTE, rewritten + 15 * MINUTE, MINUTE):
        result = cycle(now)
        assert not result.unloads and [s.reason for s in result.skips] == ["CoolDown"], now
    assert delay < 15 * MINUTE
    assert "CoolDown" not in [s.reason for s in cycle(rewritten + 15 * MINUTE + MINUTE).skips]


def test_the_simulation_clears_the_reporters_of_the_brokers_a_move_touches_and_starts_a_restarted_ones_afresh():
    """Every orphan placed, unload and split in a simulated cycle is a bundle leaving or arriving on a broker
    (``handleEvent``); a broker that restarted or left runs a new reporter when it reports again."""
    from tests.simulated import history_and_model
    from tests.test_simulation import EVENTFUL, UNSPLIT

    from lb_pipeline.simulation.balancers import make_balancer
    from lb_pipeline.simulation.engine import Simulation
    from lb_pipeline.simulation.run import run_config

    history, model = history_and_model(**EVENTFUL)
    config = run_config(UNSPLIT, {})[0]
    balancer = make_balancer("TransferShedder", config, 0)
    sim = Simulation(history, model, config, balancer)
    reporters, touched_cycles = dict(balancer.derived.brokers), 0
    for cycle in sim.run():
        now = {b: r for b, r in balancer.derived.brokers.items()}
        touched = {b for m in cycle.moves for b in (m["source"], m["destination"]) if b in now}
        for broker in touched:  # cleared after the shedder read it: nothing stored until its next run
            assert now[broker].stored is None and now[broker].local.updatedAt == 0, (cycle.ts, broker)
        touched_cycles += bool(touched)
        if cycle.ts == history.times[6]:
            assert now["broker-2:8080"] is not reporters["broker-2:8080"]  # restarted: a new reporter
        if cycle.ts >= history.times[8]:
            assert "broker-1:8080" not in now  # left
        for broker, reporter in now.items():
            if broker not in touched and broker in reporters and cycle.ts != history.times[6]:
                assert reporter is reporters[broker] and reporter.stored is not None
        reporters = now
    assert touched_cycles >= 3  # the placements at the join, the restart and the departure at least


class _EveryRun:
    """Pulsar's reporter literally: each run updates the data and writes it when ``needBrokerDataUpdate`` says so
    (the reference ``LoadDataReporter``'s shortcuts must agree with)."""

    def __init__(self):
        self.reporter, self.ran_at = LoadDataReporter(), None

    def report(self, inputs, config, now):
        from lb_pipeline.model.java_values import minutes_to_millis

        period = config.get_int("loadBalancerReportUpdateMinIntervalMillis")
        max_interval = minutes_to_millis(config.get_int("loadBalancerReportUpdateMaxIntervalMinutes"))
        r = self.reporter
        at = now - now % period if self.ran_at is None else self.ran_at + period
        while at <= now:
            r.local.update(*inputs, config, at)
            if at - r.local.reportedAt > max_interval or r._changed(config):
                r._write(at)
            self.ran_at, at = at, at + period
        return r.stored


def test_the_reporters_shortcuts_write_what_running_it_every_period_writes():
    """Only the last write of a call reaches the store, and settled averages jump to the timed writes: the same
    stored data and averages after every call as running the reporter run by run, for hostile settings too (a
    period of 1 s with a max interval of 0 wrote at every run, hours a night)."""
    settings = [{}, {"loadBalancerReportUpdateMaxIntervalMinutes": "0"},
                {"loadBalancerReportUpdateMaxIntervalMinutes": "-5"},
                {"loadBalancerReportUpdateThresholdPercentage": "-1"},
                {"loadBalancerReportUpdateMinIntervalMillis": "1000", "loadBalancerReportUpdateMaxIntervalMinutes": "1"},
                {"loadBalancerReportUpdateMinIntervalMillis": "7000", "loadBalancerReportUpdateMaxIntervalMinutes": "2",
                 "loadBalancerHistoryResourcePercentage": "0.5"}]
    for over in settings:
        config, fast, slow = PulsarConfig().overridden(**over), LoadDataReporter(), _EveryRun()
        for k in range(90):
            now = T0 + k * MINUTE + (k % 7) * 1300
            inputs = _inputs(20 + 40 * ((k // 30) % 2), rate=1000.0 + 50 * (k // 45))
            assert fast.report(inputs, config, now) == slow.report(inputs, config, now), (over, k)
            assert (fast.local.weightedMaxEMA, fast.local.updatedAt, fast.local.reportedAt) == (
                slow.reporter.local.weightedMaxEMA, slow.reporter.local.updatedAt, slow.reporter.local.reportedAt)


def test_the_modular_leader_reads_a_brokers_report_as_last_written_until_it_moved_past_the_threshold():
    """``needBrokerDataUpdate``: a change of 10 points of weighted usage or 10 % of rate, throughput or bundles or
    less leaves the last written report; more, or 15 minutes, writes again."""
    import numpy as np

    from lb_pipeline.model.config import PulsarConfig
    from lb_pipeline.simulation.engine import reported_brokers

    config, written, live = PulsarConfig(), {}, np.array([0])

    def read(u, rate, bundles, t_min):
        seen, traffic = reported_brokers(written, np.array([[u, 0, 0, 0, 0]]), np.array([[rate, rate, 1e6, 1e6]]),
                                         np.array([bundles]), live, np.array([u / 100.0]), t_min * 60_000, config)
        return seen[0, 0], traffic[0, 0]

    assert read(50.0, 1000.0, 10, 0) == (50.0, 1000.0)  # nothing written yet: written now
    assert read(58.0, 1050.0, 11, 1) == (50.0, 1000.0)  # 8 points, 5 %, 10 %: the old report
    assert read(61.0, 1050.0, 11, 2) == (61.0, 1050.0)  # 11 points: written
    assert read(62.0, 1150.0, 11, 3) == (61.0, 1050.0)  # 9.5 % more messages: not yet
    assert read(62.0, 1200.0, 11, 4) == (62.0, 1200.0)  # 14 %: written
    assert read(63.0, 1200.0, 11, 19) == (62.0, 1200.0)  # 15 minutes since the write: not more than the interval
    assert read(63.0, 1200.0, 11, 20) == (63.0, 1200.0)  # more than 15 minutes: written
