"""Time every shedding strategy and split trigger on one snapshot of the M preset (~100 brokers, ~10k bundles).

    .venv/bin/python benchmarks/bench_shedding.py [--landing DIR]

Generates the snapshot on first use (about 10 s) under benchmarks/.data/. Targets (issue 6): well under a second
per strategy. Prints one line per strategy: best of 3 runs.
"""

import argparse
import sys
import time
from pathlib import Path

from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.driver import MODULAR_STRATEGIES, ModularShedding
from lb_pipeline.algorithms.shedding.transfer_shedder import TransferShedder, derive_from_modular
from lb_pipeline.algorithms.splits.triggers import modular_split_candidates
from lb_pipeline.snapshots.generate import generate
from lb_pipeline.snapshots.layout import iter_snapshot_dirs
from lb_pipeline.snapshots.load import load_snapshot


def best_of(fn, runs=3):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return min(times), result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--landing", default=str(Path(__file__).parent / ".data" / "M"))
    args = parser.parse_args()
    if not any(iter_snapshot_dirs(args.landing)):
        print(f"generating one M snapshot under {args.landing} …", file=sys.stderr)
        generate(args.landing, "M", snapshots=1, start="2026-01-15T14:00:00Z")
    snap_dir = next(iter_snapshot_dirs(args.landing))
    t, snap = best_of(lambda: load_snapshot(snap_dir), runs=1)
    bundles = sum(len(r.get("lastStats") or {}) for r in snap.reports.values())
    print(f"snapshot {snap_dir.name}: {len(snap.brokers)} brokers, {bundles} loaded bundles (load {t:.2f} s)")
    load, _ = LoadData.from_reports(snap.reports, snap.bundle_data)
    config = snap.config
    for name in MODULAR_STRATEGIES:
        t, result = best_of(lambda: ModularShedding.named(name, config).run_cycle(load, config, snap.timestamp_ms,
                                                                                   snap.cluster_state()))
        print(f"{name:22} {t * 1000:8.1f} ms  {len(result.unloads):4} unloads")
    ext = derive_from_modular(snap.reports, config, snap.timestamp_ms, groups=snap.groups, owners=snap.ownership)
    no_debounce = config.overridden(loadBalancerSheddingConditionHitCountThreshold=0)
    t, result = best_of(lambda: TransferShedder().run_cycle(ext, no_debounce, snap.timestamp_ms))
    print(f"{'TransferShedder':22} {t * 1000:8.1f} ms  {len(result.unloads):4} unloads")
    counts = {ns: len(lay) for ns, lay in snap.layouts.items()}
    t, result = best_of(lambda: modular_split_candidates(snap.reports, snap.bundle_data, counts, config))
    print(f"{'BundleSplitterTask':22} {t * 1000:8.1f} ms  {len(result):4} hot bundles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
