"""``lb-pipeline``: the command line for operators and for the demo.

Errors meant for the user (bad input, missing Java, unreachable jars) are printed as one line and exit 2;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from lb_pipeline import cli_collect, cli_simulation
from lb_pipeline.cli_types import count, day, positions, tolerance, utc_time
from lb_pipeline.errors import LbError
from lb_pipeline.model.names import one_line


def _generate(args) -> int:
    import shutil
    from dataclasses import replace

    from lb_pipeline.snapshots.generate import PRESETS, SCENARIOS, generate, print_progress
    from lb_pipeline.snapshots.layout import cluster_folder

    from lb_pipeline.algorithms.shedding.driver import MODULAR_STRATEGIES

    if args.preset not in PRESETS:
        raise LbError(f"unknown preset {args.preset!r}; choose one of {', '.join(PRESETS)}")
    if args.balance and args.balance not in MODULAR_STRATEGIES:  # before --force removes anything
        raise LbError(f"--balance takes a modular strategy ({', '.join(MODULAR_STRATEGIES)}), not {args.balance!r}")
    if args.days < 1 or (args.snapshots is not None and args.snapshots < 1):
        raise LbError("--days and --snapshots must be at least 1")
    scenarios = None
    if args.scenario is not None:
        scenarios = tuple(dict.fromkeys(s for s in args.scenario if s != "none"))
        unknown = [s for s in scenarios if s not in SCENARIOS]
        if unknown:
            raise LbError(f"unknown scenario {unknown[0]!r}; choose from {', '.join(SCENARIOS)}, or none")
    preset = PRESETS[args.preset]
    if args.interval is not None:  # a denser (or sparser) day than the preset's hourly snapshots
        if not 1 <= args.interval <= 24 * 60 or args.days > 1:
            raise LbError("--interval takes 1 to 1440 minutes, for one day (--days spreads each day's snapshots over it)")
        preset = replace(preset, interval_minutes=args.interval)
    out = Path(args.out)
    cluster_dir = cluster_folder(out, args.cluster)  # before --force removes it: '..' is no cluster
    if cluster_dir.exists() and any(cluster_dir.iterdir()):
        if not args.force:
            raise LbError(f"{cluster_dir} already holds snapshots; pass --force to replace them")
        shutil.rmtree(cluster_dir)
    dirs = generate(out, preset, seed=args.seed, start=args.start, cluster_name=args.cluster,
                    snapshots=args.snapshots, progress=None if args.quiet else print_progress, balance=args.balance,
                    days=args.days, scenarios=scenarios)
    named = scenarios if scenarios is not None else preset.scenarios
    print(f"wrote {len(dirs)} snapshots of {args.cluster} under {cluster_dir}"
          + (f" (scenario: {', '.join(named)})" if named else ""))
    return 0


def _nightly(rest: list[str]) -> int:
    """The nightly job is Dagster's (``assets.run``); the library imports no Dagster, so this hands the process over
    to ``python -m assets.run`` with the same arguments (its exit status is the command's)."""
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "assets.run", *rest])
    return 0  # not reached


def _doctor(_args) -> int:
    from lb_pipeline.settings import spark_settings_from_env
    from lb_pipeline.spark import jar_cache
    from lb_pipeline.spark.java import require_java

    major = require_java()
    settings = spark_settings_from_env()
    folder = settings.delta_jars_dir or settings.ivy_dir
    broken = jar_cache.damaged(folder) if settings.delta_jars_dir else jar_cache.repair(folder)
    for path, why in broken:
        print(f"damaged: {path}: {why}", file=sys.stderr)
    if broken and settings.delta_jars_dir:
        print(f"LB_DELTA_JARS_DIR={folder} holds damaged jars: replace them", file=sys.stderr)
        return 1
    if broken:
        print(f"removed {len(broken)} damaged file(s) from the jar cache {folder}; the next start downloads them again")
    missing = jar_cache.delta_jars_missing(folder)
    if missing and settings.delta_jars_dir:
        print(f"LB_DELTA_JARS_DIR={folder} lacks {' and '.join(missing)}: put the jars there", file=sys.stderr)
        return 1
    state = ("ready" if not missing else
             f"no {' or '.join(missing)} yet: the first Spark start downloads them from Maven Central "
             f"(or the mirror in LB_IVY_SETTINGS), about 30 s")
    print(f"Python {sys.version.split()[0]}, Java {major}, jar cache {folder}: {state}")
    return 0


def _ingest(args) -> int:
    from lb_pipeline.ingest.bronze import ingest_day
    from lb_pipeline.settings import lake_root_from_env
    from lb_pipeline.spark.lake import Lake
    from lb_pipeline.spark.session import get_session

    lake = Lake(args.lake or lake_root_from_env())
    result = ingest_day(get_session(), lake, args.landing, args.day, log=print)
    print(f"bronze tables for {args.day} under {lake.root}/bronze ({result.quarantine.rows} quarantined)")
    return 0


def _validate_snapshot(args) -> int:
    from lb_pipeline.ingest.landing import shown
    from lb_pipeline.ingest.validate import validate_snapshot
    from lb_pipeline.snapshots.layout import MANIFEST, find_snapshots

    roots = [Path(d) for d in args.dirs]
    dirs = [d for r in roots for d in find_snapshots(r)] if args.recursive else roots
    if not dirs:
        raise LbError(f"no snapshot directories (with {MANIFEST}) under {', '.join(map(str, roots))}")
    bad = 0
    for d in dirs:
        findings = validate_snapshot(d, tolerance=args.tolerance)
        bad += bool(findings)
        print(f"{shown(str(d))}: {'OK' if not findings else f'{len(findings)} problem(s)'}")
        for f in findings[: args.max_findings]:
            print(f"  {f}")
        if len(findings) > args.max_findings:
            print(f"  … {len(findings) - args.max_findings} more")
    return 1 if bad else 0


_PROFILE_HELP = "Pulsar version profile (default: the one of the Pulsar version the snapshot reports)"


def _loaded(args):  # the snapshot of a what-if; what was left out of it is said on stderr (stdout is the answer)
    from lb_pipeline.snapshots.load import load_snapshot

    snap = load_snapshot(args.snapshot, profile=args.profile)
    for note in snap.notes:
        print(f"lb-pipeline: note: {one_line(note)}", file=sys.stderr)
    return snap


def _whatif_split(args) -> int:
    from lb_pipeline.whatif.split import render_text, to_json, whatif_split

    snap = _loaded(args)
    said = len(snap.notes)
    results = whatif_split(snap, args.namespace, args.assume_sustained, args.positions)
    for note in snap.notes[said:]:
        print(f"lb-pipeline: note: {one_line(note)}", file=sys.stderr)
    print(json.dumps(to_json(results), indent=2) if args.json else render_text(results, snap))
    return 0


def _whatif_shed(args) -> int:
    from dataclasses import asdict

    from lb_pipeline.whatif.shed import STRATEGIES, render_text, whatif_shed

    if not args.all and not args.strategy:
        raise LbError("name a strategy with --strategy NAME or use --all")
    if args.strategy and args.strategy not in STRATEGIES:
        raise LbError(f"unknown strategy {args.strategy!r}; choose from {', '.join(STRATEGIES)}")
    snap = _loaded(args)
    results = whatif_shed(snap, list(STRATEGIES) if args.all else [args.strategy], seed=args.seed,
                          assume_sustained=not args.single_cycle)
    print(json.dumps([asdict(r) for r in results], indent=2) if args.json else render_text(results, snap))
    return 0


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    from lb_pipeline import __version__

    def of(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "not installed"
    return f"lb-pipeline {__version__} (pyspark {of('pyspark')}, delta-spark {of('delta-spark')}, dagster {of('dagster')})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lb-pipeline", description=__doc__.splitlines()[0].replace("``", ""))
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="write a synthetic cluster history in the snapshot format")
    g.add_argument("--preset", default="demo", help="demo, S, M or L (default demo)")
    g.add_argument("--out", default="landing", help="landing folder (default ./landing)")
    g.add_argument("--seed", type=count, default=7)
    g.add_argument("--start", type=utc_time, default="2026-01-15T00:00:00Z", help="time of the first snapshot (UTC)")
    g.add_argument("--snapshots", type=int, default=None, help="snapshots to write (default: the preset's), one every "
                   "--interval minutes; with --days, per day, spread over it")
    g.add_argument("--interval", type=int, metavar="MINUTES", help="minutes between snapshots (default: the preset's, 60)")
    g.add_argument("--days", type=int, default=1, help="days of history (default 1); over several days traffic and "
                                                       "topics grow, weekends are quieter and incidents happen")
    g.add_argument("--cluster", default="demo-cluster")
    g.add_argument("--force", action="store_true", help="replace existing snapshots of this cluster")
    g.add_argument("--balance", metavar="STRATEGY", help="balance the cluster with this modular shedding strategy "
                                                         "once per snapshot (its unloads show in the next snapshot)")
    g.add_argument("--scenario", action="append", metavar="NAME",
                   help="a named shape to add, repeatable, instead of the preset's own: hot-topic (one topic too "
                        "large for most brokers, a hot bundle no split can help; the demo preset has it), or none")
    g.add_argument("--quiet", action="store_true")
    g.set_defaults(func=_generate)

    n = sub.add_parser("nightly", add_help=False,
                       help="the nightly job for every day of a landing folder (python -m assets.run: --landing, "
                            "--lake, --reports, --day, --sets; --help for its own help)")
    n.set_defaults(func=lambda _args: _nightly([]))

    d = sub.add_parser("doctor", help="check Java 17+ for Spark, and check (and repair) the cached Delta jars")
    d.set_defaults(func=_doctor)

    i = sub.add_parser("ingest", help="ingest one day of snapshots into the bronze tables (without Dagster)")
    i.add_argument("--landing", default="landing")
    i.add_argument("--lake", default=None, help="lake root (default $LB_LAKE_ROOT or ./lake)")
    i.add_argument("--day", required=True, type=day, help="UTC day, YYYY-MM-DD")
    i.set_defaults(func=_ingest)
    v = sub.add_parser("validate-snapshot", help="report malformed or inconsistent files in snapshot directories")
    v.add_argument("dirs", nargs="+", help="snapshot directories (or, with -r, folders holding them)")
    v.add_argument("-r", "--recursive", action="store_true", help="check every snapshot found below the folders")
    v.add_argument("--tolerance", type=tolerance, default=1e-6, help="relative tolerance of sums (default 1e-6)")
    v.add_argument("--max-findings", type=count, default=20)
    v.set_defaults(func=_validate_snapshot)
    cli_collect.add_command(sub)

    w = sub.add_parser("whatif", help="what Pulsar would do now, on one snapshot")
    wsub = w.add_subparsers(dest="whatif", required=True)
    ws = wsub.add_parser("split", help="bundles that would split, each algorithm's boundaries and commands")
    ws.add_argument("snapshot", help="a snapshot directory")
    ws.add_argument("--namespace", help="only this tenant/namespace")
    ws.add_argument("--assume-sustained", action="store_true",
                    help="treat the snapshot's load as lasting long enough for the extensible hit-count threshold")
    ws.add_argument("--positions", type=positions, help="comma-separated positions for specified_positions_divide (hex or decimal)")
    ws.add_argument("--profile", help=_PROFILE_HELP)
    ws.add_argument("--json", action="store_true", help="machine-readable output")
    ws.set_defaults(func=_whatif_split)
    wh = wsub.add_parser("shed", help="what each shedding strategy would unload now, with destinations and commands")
    wh.add_argument("snapshot", help="a snapshot directory")
    wh.add_argument("--strategy", help="OverloadShedder, ThresholdShedder, UniformLoadShedder, AvgShedder, TransferShedder")
    wh.add_argument("--all", action="store_true", help="every strategy, side by side")
    wh.add_argument("--single-cycle", action="store_true",
                    help="one cycle only (by default hit-count strategies see the load as sustained)")
    wh.add_argument("--seed", type=count, default=0, help="seed of the placement strategies' random tie-breaks")
    wh.add_argument("--profile", help=_PROFILE_HELP)
    wh.add_argument("--json", action="store_true")
    wh.set_defaults(func=_whatif_shed)

    cli_simulation.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from lb_pipeline.terminal import escaping_output

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["nightly"]:  # every argument is the job's own (argparse would take --help and the options)
        return _nightly(argv[1:])
    args = build_parser().parse_args(argv)
    with escaping_output():
        try:
            return args.func(args)
        except LbError as exc:
            print(f"lb-pipeline: {one_line(str(exc))}", file=sys.stderr)  # names in it
            return 2


if __name__ == "__main__":
    sys.exit(main())
