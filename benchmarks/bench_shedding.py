"""Time every modular shedding strategy per cycle against Pulsar's own Java on the same input, and the whole
replay cycle (strategy + Pulsar's placement path) on one snapshot of the M preset.

    .venv/bin/python benchmarks/bench_shedding.py [--oracle-jar .oracle/4.0.8/pulsar-oracle.jar] [--iterations 200]

Input: 60 brokers with 2-166 bundles each (about 5,000 bundles; Pareto traffic, some recently unloaded
bundles), one cycle per strategy, written as the oracle's JSON under benchmarks/.data/. Both sides time only
``findBundlesForUnloading`` (Pulsar builds its LoadData objects beforehand, lb_pipeline its LoadFrame), median
over the iterations, fresh strategy each time; the frames are timed beside them and the last columns count them:
"frame", built from a snapshot's JSON (a nightly replay's cycle; Pulsar's leader has its LoadData already), and "run
frame", built from a simulation run's own arrays (the bundles' orders once per snapshot, the cycle's averages, usage
and ownership read as arrays), whose strategy must unload exactly what it unloads from the JSON. The oracle is built by
``make conformance`` (or pass its jar); without Java the Python figures print alone. Target (issues 16 and 59): every
strategy's whole cycle in a run, frame counted, at least 5x faster than Java.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.driver import MODULAR_STRATEGIES, ModularShedding
from lb_pipeline.algorithms.shedding.frame import build_frame
from lb_pipeline.algorithms.shedding.transfer_inputs import derive_from_modular
from lb_pipeline.algorithms.shedding.transfer_shedder import TransferShedder
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.simulation.leader_view import JSON_NAMES, RATES, BundleOrders, leader_load
from lb_pipeline.snapshots.generate import generate
from lb_pipeline.snapshots.layout import iter_snapshot_dirs
from lb_pipeline.snapshots.load import load_snapshot

DATA = Path(__file__).parent / ".data"
CONFIG = {"OverloadShedder": {"loadBalancerBrokerOverloadedThresholdPercentage": 70},
          "ThresholdShedder": {"loadBalancerBundleUnloadMinThroughputThreshold": 1},
          "UniformLoadShedder": {"minUnloadMessage": 100},
          "AvgShedder": {"loadBalancerAvgShedderHitCountHighThreshold": 1, "loadBalancerAvgShedderHitCountLowThreshold": 1,
                         "minUnloadMessage": 100}}


def bench_case(strategy: str, brokers: int = 60, seed: int = 42) -> dict:
    rnd = random.Random(seed)
    reports, data, recent, now = {}, {}, {}, 1_700_000_000_000
    for b in range(brokers):
        names = [f"tenant/ns-{b % 7}/0x{(b * 256 + j) << 16:08x}_0x{(b * 256 + j + 1) << 16:08x}"
                 for j in range(rnd.randint(2, 166))]
        tot = [0.0] * 4
        for name in names:
            r_in, r_out, size = rnd.paretovariate(1.3) * 100, rnd.paretovariate(1.3) * 100, rnd.choice((100, 1024, 10240))
            st = {"maxSamples": 10, "numSamples": 10, "msgRateIn": round(r_in, 3), "msgRateOut": round(r_out, 3),
                  "msgThroughputIn": round(r_in * size, 1), "msgThroughputOut": round(r_out * size, 1)}
            data[name] = {"shortTermData": st, "longTermData": dict(st, maxSamples=1000), "topics": rnd.randint(1, 50)}
            tot = [tot[0] + st["msgRateIn"], tot[1] + st["msgRateOut"], tot[2] + st["msgThroughputIn"], tot[3] + st["msgThroughputOut"]]
            if rnd.random() < 0.02:
                recent[name] = now - 60_000
        usage = lambda hi: {"usage": round(rnd.uniform(5, hi), 2), "limit": 100.0}  # noqa: E731
        reports[f"broker-{b}:8080"] = {"cpu": usage(100), "memory": usage(80), "directMemory": usage(80),
                                       "bandwidthIn": usage(95), "bandwidthOut": usage(95), "msgRateIn": tot[0],
                                       "msgRateOut": tot[1], "msgThroughputIn": tot[2], "msgThroughputOut": tot[3],
                                       "bundles": names}
    return {"name": f"bench-{strategy}", "strategy": strategy, "config": CONFIG[strategy],
            "cycles": [{"now_ms": now, "brokers": reports, "bundleData": data, "recentlyUnloadedBundles": recent}]}


def python_median_us(case: dict, iterations: int) -> tuple[float, int, float]:
    config = PulsarConfig({k: str(v) for k, v in case["config"].items()})
    cy = case["cycles"][0]
    load = LoadData(cy["brokers"], cy["bundleData"], cy["recentlyUnloadedBundles"])
    t = time.perf_counter()
    load.frame(config)  # the LoadData objects Pulsar builds before the timed calls
    build = time.perf_counter() - t
    times, unloads = [], 0
    for _ in range(iterations):
        strategy = MODULAR_STRATEGIES[case["strategy"]]()
        t = time.perf_counter()
        unloads = len(strategy.find_bundles_for_unloading(load, config).unloads)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6, unloads, build * 1e3


def frame_median_us(case: dict, iterations: int) -> float:
    """The frame each cycle of a nightly replay builds from the snapshot's dicts (``build_frame``; hash orders
    cached after the first): the part of a cycle Pulsar's leader keeps up to date as reports arrive instead, so the
    Java column has no counterpart. Median over ``iterations`` builds, the first (cold caches) left out."""
    config = PulsarConfig({k: str(v) for k, v in case["config"].items()})
    cy = case["cycles"][0]
    skip = config.release.shed_skips_system_namespace
    build_frame(cy["brokers"], cy["bundleData"], skip)
    times = []
    for _ in range(max(1, iterations // 10)):
        t = time.perf_counter()
        build_frame(cy["brokers"], cy["bundleData"], skip)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def run_frame_median_us(case: dict, iterations: int) -> tuple[float, float, bool]:
    """The frame a simulation run's cycle builds from the run's own arrays (``simulation/leader_view.py``: the bundles'
    hash orders computed once per snapshot, the per-cycle averages, usage and ownership read as arrays), on the same
    input as the other columns: (median µs per cycle over ``iterations // 10`` builds after the first, ms to build the
    cycle's ``LoadData`` views the leader keeps up to date in Pulsar and Java does not count either, whether the
    strategy unloads exactly what it unloads from the JSON)."""
    cy = case["cycles"][0]
    config = PulsarConfig({k: str(v) for k, v in case["config"].items()})
    brokers, bundles = list(cy["brokers"]), list(cy["bundleData"])
    index = {b: n for n, b in enumerate(bundles)}
    owner = np.full(len(bundles), -1, np.int64)
    for k, b in enumerate(brokers):
        owner[[index[x] for x in cy["brokers"][b]["bundles"]]] = k

    def stats(key: str) -> np.ndarray:
        return np.array([[cy["bundleData"][b][key][f] for f in RATES] for b in bundles], dtype=np.float64)

    short, long_ = stats("shortTermData"), stats("longTermData")
    per_broker = lambda keys, field=None: np.array(  # noqa: E731
        [[(cy["brokers"][b][k][field] if field else cy["brokers"][b][k]) for k in keys] for b in brokers])
    n = len(bundles)
    h = SimpleNamespace(brokers=brokers, present=np.ones((1, n), bool), clients=np.zeros((1, n, 2)), meta={},
                        topics=np.array([[cy["bundleData"][b]["topics"] for b in bundles]]),
                        limits=per_broker(JSON_NAMES, "limit")[None])
    t = time.perf_counter()
    load = leader_load(h, 0, np.arange(len(brokers)), owner, short, per_broker(RATES), per_broker(JSON_NAMES, "usage"),
                       (short, long_), (np.full(n, 10), np.full(n, 1000)), BundleOrders(bundles, index))
    views = time.perf_counter() - t
    load.recently_unloaded.update(cy["recentlyUnloadedBundles"])
    skip = config.release.shed_skips_system_namespace
    load.frame(config)  # the snapshot's orders, once per snapshot of a run
    times = []
    for _ in range(max(1, iterations // 10)):
        t = time.perf_counter()
        load.frame_builder(skip)
        times.append(time.perf_counter() - t)
    strategy = MODULAR_STRATEGIES[case["strategy"]]
    same = (strategy().find_bundles_for_unloading(load, config).unloads ==
            strategy().find_bundles_for_unloading(LoadData(cy["brokers"], cy["bundleData"], cy["recentlyUnloadedBundles"]),
                                                  config).unloads)
    return statistics.median(times) * 1e6, views * 1e3, same


def java_median_us(jar: Path, path: Path, iterations: int) -> float | None:
    try:
        out = subprocess.run(["java", "-jar", str(jar), "bench", "shedders", str(path), str(iterations)],
                             capture_output=True, text=True, check=True, timeout=900).stdout
    except (OSError, subprocess.SubprocessError) as e:
        print(f"  (oracle bench failed: {e})", file=sys.stderr)
        return None
    return float(json.loads(out)["per_call_median_us"])


def replay_cycle_on_m(args) -> None:
    landing = DATA / "M-one-snapshot"  # its own folder: bench_pipeline keeps landing/, lake/, floor-lake/ under M/
    if not any(iter_snapshot_dirs(landing)):
        print(f"generating one M snapshot under {landing} …", file=sys.stderr)
        generate(landing, "M", snapshots=1, start="2026-01-15T14:00:00Z")
    snap = load_snapshot(next(iter_snapshot_dirs(landing)))
    load, _ = LoadData.from_reports(snap.reports, snap.bundle_data)
    # the loader's garbage collected now and the snapshot set aside: a full collection of it (about 0.5 s) landed
    # in whichever strategy's single timed cycle came next
    gc.collect()
    gc.freeze()
    bundles = sum(len(r.get("lastStats") or {}) for r in snap.reports.values())
    print(f"\nwhole replay cycle (strategy + placement path) on an M snapshot: {len(snap.brokers)} brokers, {bundles} bundles")
    for name in MODULAR_STRATEGIES:
        run = ModularShedding.named(name, snap.config)
        t = time.perf_counter()
        result = run.run_cycle(load, snap.config, snap.timestamp_ms, snap.cluster_state())
        print(f"  {name:22} {(time.perf_counter() - t) * 1000:8.1f} ms  {len(result.unloads):4} unloads")
    ext = derive_from_modular(snap.reports, snap.config, snap.timestamp_ms, groups=snap.groups, owners=snap.ownership)
    t = time.perf_counter()
    result = TransferShedder().run_cycle(ext, snap.config.overridden(loadBalancerSheddingConditionHitCountThreshold=0),
                                         snap.timestamp_ms)
    print(f"  {'TransferShedder':22} {(time.perf_counter() - t) * 1000:8.1f} ms  {len(result.unloads):4} unloads")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--oracle-jar", default=str(Path(__file__).parents[1] / ".oracle" / "4.0.8" / "pulsar-oracle.jar"))
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--skip-m", action="store_true", help="only the strategy-vs-Java table")
    args = ap.parse_args()
    jar = Path(args.oracle_jar)
    DATA.mkdir(parents=True, exist_ok=True)
    print(f"per-cycle findBundlesForUnloading, median of {args.iterations}; Java: {jar if jar.is_file() else 'not built'}")
    print(f"{'strategy':22} {'bundles':>7} {'unloads':>7} {'Python µs':>10} {'Java µs':>10} {'Java/Python':>11} "
          f"{'frame µs':>9} {'Java/(frame+Python)':>20} {'run frame µs':>13} {'Java/(run frame+Python)':>24}")
    differ = []
    for name in MODULAR_STRATEGIES:
        case = bench_case(name)
        path = DATA / f"bench-{name}.json"
        path.write_text(json.dumps(case))
        py, unloads, _ = python_median_us(case, args.iterations)
        frame = frame_median_us(case, args.iterations)
        run_frame, views_ms, same = run_frame_median_us(case, args.iterations)
        if not same:
            differ.append(name)
        java = java_median_us(jar, path, args.iterations) if jar.is_file() else None
        n = len(case["cycles"][0]["bundleData"])
        ratio = f"{java / py:10.1f}x" if java else "         -"
        whole = f"{java / (frame + py):19.2f}x" if java else " " * 19 + "-"
        run = f"{java / (run_frame + py):23.2f}x" if java else " " * 23 + "-"
        print(f"{name:22} {n:7} {unloads:7} {py:10.0f} {java or float('nan'):10.0f} {ratio} {frame:9.0f} {whole} "
              f"{run_frame:13.0f} {run}")
    print(f"frame: from the snapshot's JSON (a nightly replay's cycle); run frame: from a simulation run's arrays "
          f"(orders once per snapshot); the run's LoadData views besides: {views_ms:.1f} ms, not counted, as Java's")
    if differ:
        print(f"ERROR: from the run's arrays {', '.join(differ)} unloaded other bundles than from the JSON", file=sys.stderr)
        return 1
    if not args.skip_m:
        replay_cycle_on_m(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
