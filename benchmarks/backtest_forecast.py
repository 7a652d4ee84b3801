"""How often the capacity forecast's 5-95 % band held what came next (docs/capacity.md quotes the figures):
generates fourteen demo nights per seed (24 snapshots a night: growth, weekends, incidents, a broker added and
one removed), forecasts from the first k nights for every k with ``gold/capacity_forecast``'s own code, and scores
the band on the daily peaks of the nights after, per scope (broker, failure domain, cluster), over all nights and
over those with the same brokers as the forecast's last night.

    .venv/bin/python benchmarks/backtest_forecast.py [--seeds 7 11 3] [--snapshots 24] [--days 14] [--landing DIR]

About a minute a seed on the 2-core machine (the generation; the backtest itself takes ~10 s). ``--landing`` scores
an existing landing folder (one cluster) instead.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    import pandas as pd

    from lb_pipeline.snapshots.generate import generate
    from lb_pipeline.snapshots.layout import find_snapshots
    from lb_pipeline.transforms.forecast_backtest import backtest, coverage, landing_usage

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[7, 11, 3])
    parser.add_argument("--snapshots", type=int, default=24)
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--threshold", type=float, default=85.0)
    parser.add_argument("--landing", type=Path)
    args = parser.parse_args()
    tables = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = [(str(args.landing), sorted(find_snapshots(args.landing)))] if args.landing else [
            (f"seed {s}", generate(Path(tmp) / str(s), "demo", seed=s, snapshots=args.snapshots, days=args.days))
            for s in args.seeds]
        for name, snapshots in runs:
            c = coverage(backtest(landing_usage(snapshots), args.threshold))
            tables.append(c.assign(history=name))
            print(f"{name}:\n{c.round(2).to_string(index=False)}\n", flush=True)
    if len(tables) > 1:
        c = pd.concat(tables)
        print("every history:")
        print(c.groupby(["scope", "brokers"]).apply(lambda g: pd.Series({
            "outcomes": g["outcomes"].sum(), "inside": (g["inside"] * g["outcomes"]).sum() / g["outcomes"].sum(),
            "inside min-max": f"{g['inside'].min():.2f}-{g['inside'].max():.2f}"}), include_groups=False).to_string())


if __name__ == "__main__":
    main()
