"""How much the shedding replays change when the leader's bundle averages (BundleData) are not collected and have to
be rebuilt from the snapshot series, as on a real cluster (the admin REST API does not expose them).

    .venv/bin/python benchmarks/bench_input_approximation.py [--preset demo] [--snapshots 24]

Generates a day whose snapshots carry the leader's true BundleData (averages over the whole history), then
replays every modular strategy twice over its second half, state carried: with the stored averages, and with
averages rebuilt from that half's snapshots only (the same update rule, one sample per broker-report minute,
seeded with each bundle's first sample: what ``silver/bundle_time_averages`` does for a cluster whose collection
started that morning). Prints, per strategy, the unloads of each replay and how many agree (same cycle, bundle
and source broker). docs/algorithms.md quotes the figures for the demo preset.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace

from lb_pipeline.algorithms import time_average as ta
from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.driver import MODULAR_STRATEGIES, ModularShedding
from lb_pipeline.algorithms.splits.triggers import modular_split_candidates
from lb_pipeline.snapshots.generate import PRESETS, generate
from lb_pipeline.snapshots.load import load_snapshot

KEYS = {"msg_rate_in": "msgRateIn", "msg_rate_out": "msgRateOut", "msg_throughput_in": "msgThroughputIn",
        "msg_throughput_out": "msgThroughputOut"}


def rebuilt(history) -> list[dict[str, dict]]:
    """Per snapshot: BundleData rebuilt from the samples, without the stored values."""
    state: dict[str, dict] = {}
    out, previous = [], None
    for snap in history:
        minutes = 1 if previous is None else max(1, round((snap.timestamp_ms - previous) / 60_000))
        previous = snap.timestamp_ms
        data = {}
        for report in snap.reports.values():
            for bundle, stats in (report.get("lastStats") or {}).items():
                avgs = state.setdefault(bundle, {w: {f: (0, 0.0) for f in KEYS} for w in ("short", "long")})
                k = 1 if all(n == 0 for n, _ in avgs["short"].values()) else minutes
                for w, window in (("short", ta.SHORT_SAMPLES), ("long", ta.LONG_SAMPLES)):
                    for f, json_key in KEYS.items():
                        n, avg = avgs[w][f]
                        avgs[w][f] = ta.update(n, avg, float(stats.get(json_key, 0.0)), k, window)
                data[bundle] = {f"{w}TermData": {"numSamples": avgs[w]["msg_rate_in"][0],
                                                 **{KEYS[f]: avgs[w][f][1] for f in KEYS}} for w in ("short", "long")}
        out.append(data)
    return out


def replay(history, averages, strategy: str) -> tuple[set[tuple], set[tuple]]:
    """(unloads as (cycle, bundle, source), the same with the destination placement chose)."""
    run = ModularShedding.named(strategy, history[0].config, seed=1)
    unloads, placed = set(), set()
    for i, snap in enumerate(history):
        load = LoadData(snap.reports, averages[i])
        for u in run.run_cycle(load, snap.config, snap.timestamp_ms, snap.cluster_state()).unloads:
            unloads.add((i, u.bundle, u.broker))
            placed.add((i, u.bundle, u.broker, u.destination))
    return unloads, placed


def splits(history, averages) -> set[tuple]:
    """BundleSplitterTask's selections (it reads the long-term averages)."""
    out = set()
    for i, snap in enumerate(history):
        counts = {ns: len(lay) for ns, lay in snap.layouts.items()}
        out |= {(i, d.bundle) for d in modular_split_candidates(snap.reports, averages[i], counts, snap.config) if d.selected}
    return out


def agreement(a: set, b: set) -> str:
    union = a | b
    return f"{len(a & b) / len(union):.0%}" if union else "100%"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="demo")
    ap.add_argument("--snapshots", type=int, default=24)
    ap.add_argument("--interval-minutes", type=int, default=None, help="snapshot cadence (default: the preset's)")
    args = ap.parse_args()
    preset = PRESETS[args.preset]
    if args.interval_minutes:
        preset = replace(preset, interval_minutes=args.interval_minutes)
    with tempfile.TemporaryDirectory() as tmp:
        dirs = generate(tmp, preset, seed=11, snapshots=args.snapshots)
        history = [load_snapshot(d) for d in dirs][args.snapshots // 2:]  # collection starts at noon
    stored = [snap.bundle_data for snap in history]
    approx = rebuilt(history)
    print(f"{args.preset}, a snapshot every {preset.interval_minutes} min: the last {len(history)} snapshots, "
          "stored vs rebuilt bundle averages")
    print(f"{'':20} {'stored':>7} {'rebuilt':>8} {'same':>6} {'agree':>6} {'same destination':>17}")
    for name in MODULAR_STRATEGIES:
        (a, ad), (b, bd) = replay(history, stored, name), replay(history, approx, name)
        print(f"{name:20} {len(a):7} {len(b):8} {len(a & b):6} {agreement(a, b):>6} {agreement(ad, bd):>17}")
    a, b = splits(history, stored), splits(history, approx)
    print(f"{'BundleSplitterTask':20} {len(a):7} {len(b):8} {len(a & b):6} {agreement(a, b):>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
