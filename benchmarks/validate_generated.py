"""The closed loop on generated days balanced by each modular strategy: ``lb-pipeline generate --balance STRATEGY``
writes a day whose own leader runs that strategy once a snapshot; ``validate-simulation`` scores the closed loop
of that strategy against the unloads it made. A plumbing check, not a comparison with Pulsar (the generator's
leader runs lb_pipeline's own shedding code): it shows the history, the load model's inputs and the strategy's
state reach the loop intact. docs/validation.md quotes the figures.

    .venv/bin/python benchmarks/validate_generated.py [--preset S] [--seed 3] [--scenario hot-topic] [--keep DIR]

About 25 s a strategy on S (generating 13 s, validating 10 s) on the 2-core machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STRATEGIES = ("OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="S")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--scenario", action="append", help="as generate's --scenario (repeatable)")
    ap.add_argument("--keep", help="write the landing folders here and keep them")
    args = ap.parse_args()

    from lb_pipeline.simulation.real_validation import validate_simulation
    from lb_pipeline.simulation.real_validation_text import render_text
    from lb_pipeline.snapshots.generate import generate

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="validate-generated-"))
    rows = []
    for strategy in STRATEGIES:
        landing = work / f"{args.preset}-{args.seed}-{strategy}"
        if landing.exists():
            import shutil
            shutil.rmtree(landing)
        started = time.monotonic()
        dirs = generate(landing, args.preset, seed=args.seed, balance=strategy,
                        scenarios=tuple(args.scenario) if args.scenario else None)
        day = dirs[0].name[:10]
        result = validate_simulation(landing, day)
        print(render_text(result), f"({time.monotonic() - started:.0f} s)", "", sep="\n", flush=True)
        rows.append(result)
    print("| strategy | made | simulated | matched | to the same broker | precision | recall | same until "
          "| usage error |")
    print("|---|---|---|---|---|---|---|---|---|")

    def pct(x):
        return "–" if x is None else f"{x:.2f}"

    for r in rows:
        until = "the end" if r["first_difference_ms"] is None else time.strftime(
            "%H:%M", time.gmtime(r["first_difference_ms"] / 1000))
        print(f"| {r['strategy']} | {r['logged_unloads']} | {r['simulated_unloads']} | {r['matched_unloads']} | "
              f"{r['destinations_agree']} | {pct(r['precision'])} | {pct(r['recall'])} | {until} | "
              f"{r['usage_mae_points']:.1f} points |")
    if not args.keep:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
