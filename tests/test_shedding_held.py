"""A shedding strategy over a snapshot's load held for the cycles before the next snapshot (``shedding/held.py``)."""

from lb_pipeline.algorithms.shedding.common import MIB, LoadData, SheddingResult, Unload
from lb_pipeline.algorithms.shedding.driver import ModularShedding
from lb_pipeline.algorithms.shedding.held import held_cycles
from lb_pipeline.algorithms.shedding.transfer_inputs import DerivedLoadState, derive_from_modular
from lb_pipeline.algorithms.shedding.transfer_shedder import TransferShedder
from lb_pipeline.model.config import PulsarConfig
from tests.test_shedders_modular import bdata, broker, ns_bundles

MINUTE = 60_000


def _unload() -> Unload:
    return Unload("X", "b1", "t/a/0x00000000_0x00000001", "r", "m", 1.0, 0.5, 1.0, "bytes/s", 1.0)


def test_the_cycles_run_an_interval_apart_and_stop_at_the_first_that_unloads():
    seen = []

    def run(now):
        seen.append(now)
        return SheddingResult(unloads=[_unload()] if len(seen) == 4 else [])

    held = held_cycles(run, 1_000, 60, 5 * MINUTE)
    assert held.cycle == 4 and held.result.unloads
    assert seen == [1_000 + k * 5 * MINUTE for k in range(4)]


def test_a_window_that_never_unloads_runs_every_cycle_and_at_least_one():
    seen = []
    held = held_cycles(lambda now: seen.append(now) or SheddingResult(), 0, 7, MINUTE)
    assert (held.cycle, len(seen), held.result.unloads) == (7, 7, [])
    seen.clear()
    assert held_cycles(lambda now: seen.append(now) or SheddingResult(), 0, 0, MINUTE).cycle == 1 and seen == [0]


def _threshold_load(cpu_b1: float) -> LoadData:
    b1 = ns_bundles("a", 3)
    # broker ids are host:port: placement parses the host for isolation policies
    return LoadData({"b1:80": broker(cpu_b1, b1, throughput=200 * MIB), "b2:80": broker(20, ns_bundles("b", 2)),
                     "b3:80": broker(20, ns_bundles("c", 2))}, {b: bdata(throughput=30 * MIB) for b in b1})


def test_threshold_shedder_reacts_within_minutes_of_a_jump_where_one_cycle_an_hour_took_hours():
    config = PulsarConfig()
    p, thr = config.get_float("loadBalancerHistoryResourcePercentage"), 0.10

    def replay(cycles: int) -> list[tuple[int, int]]:
        shedding, out = ModularShedding.named("ThresholdShedder", config), []
        for snapshot, cpu in enumerate((20, 20, 90, 90, 90, 90)):
            held = held_cycles(lambda now, load=_threshold_load(cpu): shedding.run_cycle(load, config, now),
                               snapshot * 60 * MINUTE, cycles, MINUTE)
            if held.result.unloads:
                out.append((snapshot, held.cycle))
        return out

    # b1's average usage from 20 % towards 90 % a step a cycle; the others stay at 20 %: it sheds at the first cycle
    # its average is at least the brokers' average + 10 %
    ema, first = 0.20, None
    for cycle in range(1, 61):
        ema = ema * p + (1 - p) * 0.90
        if first is None and ema >= (ema + 0.40) / 3 + thr:
            first = cycle
    assert first is not None and 1 < first < 60
    assert replay(60)[0] == (2, first)
    assert replay(1)[0][0] > 2  # one cycle per snapshot: hours later


def _transfer_reports() -> dict:
    reports = {}
    for name, cpu in (("b1:80", 90), ("b2:80", 10), ("b3:80", 10)):
        bundles = ns_bundles(name[:2], 4)
        reports[name] = broker(cpu, bundles, throughput=40 * MIB)
        reports[name]["lastStats"] = {b: {"msgRateIn": 100.0, "msgRateOut": 0.0, "msgThroughputIn": 10.0 * MIB,
                                          "msgThroughputOut": 0.0, "topics": 1} for b in bundles}
    return reports


def test_transfer_shedder_unloads_once_its_hit_count_passes_within_the_window():
    config, reports = PulsarConfig(), _transfer_reports()
    hits = config.get_int("loadBalancerSheddingConditionHitCountThreshold")
    shedder, derived = TransferShedder(), DerivedLoadState()

    def run(now):
        return shedder.run_cycle(derive_from_modular(reports, config, now, derived), config, now)

    held = held_cycles(run, 0, 60, MINUTE)
    assert held.cycle == hits + 1  # "more than" the threshold of consecutive cycles
    assert {u.broker for u in held.result.unloads} == {"b1:80"}
    # a snapshot ten minutes later: its cycles carry on from that unload; what moved is in its grace period (30 min)
    later = held_cycles(run, 10 * MINUTE, 60, MINUTE)
    moved = {u.bundle for u in held.result.unloads}
    assert later.result.unloads and not moved & {u.bundle for u in later.result.unloads}
