"""``lb-pipeline simulate`` and ``validate-simulation``: the closed-loop simulation from the command line."""

from __future__ import annotations

import argparse
import json

from lb_pipeline.cli_types import day, key_value, size
from lb_pipeline.errors import LbError


def _simulate(args) -> int:
    from lb_pipeline.model.config import value_problem
    from lb_pipeline.simulation.balancers import STRATEGIES
    from lb_pipeline.simulation.local import progress_bar, render_text, simulate_all
    from lb_pipeline.simulation.sweep import run_list

    if bool(args.landing) == bool(args.lake):
        raise LbError("give the history as --landing FOLDER or --lake ROOT (one of them)")
    if args.landing:
        from lb_pipeline.simulation.landing import read_history, read_leader

        cluster, brokers, bundles, config, notes, policies, topics, ran = read_history(
            args.landing, args.day, args.cluster, args.profile)
        leader = read_leader(args.landing, args.day, cluster, notes, bundles)
    else:
        from lb_pipeline.settings import lake_root_from_env
        from lb_pipeline.spark.lake import Lake
        from lb_pipeline.spark.session import get_session
        from lb_pipeline.transforms.lake_history import lake_history, lake_leader

        lake = Lake(args.lake or lake_root_from_env())
        cluster, brokers, bundles, config, notes, policies, topics, ran = lake_history(
            get_session(), lake, args.day, args.cluster, args.profile)
        leader = lake_leader(get_session(), lake, args.day, cluster)
    overrides = dict(args.set or ())
    unknown = sorted(k for k in overrides if k not in config)
    if unknown:
        raise LbError(f"--set: unknown Pulsar configuration key(s) {', '.join(unknown)}")
    refused = [f"{k}: {why}" for k, v in overrides.items() if (why := value_problem(k, v))]  # as a broker would
    if refused:
        raise LbError("--set: " + "; ".join(refused))
    try:
        config = config.overridden(**overrides)
        runs = run_list(config, args.strategy or STRATEGIES, sets_per_strategy=args.sets, seeds=tuple(range(args.seeds)))
        result = simulate_all(cluster, brokers, bundles, config, runs, None if args.quiet else progress_bar(len(runs)),
                              policies, topics, None if overrides else ran,  # --set: validated as set all day
                              leader)
    except ValueError as exc:
        raise LbError(str(exc)) from None
    result["notes"] = notes + result["notes"]
    print(json.dumps(result, indent=2, default=str) if args.json else render_text(result))
    return 0


def _validate_simulation(args) -> int:
    from lb_pipeline.simulation.landing import only_day
    from lb_pipeline.simulation.real_validation import rank, validate_simulation
    from lb_pipeline.simulation.real_validation_text import render_ranking, render_text

    results = []
    for landing in args.landing:
        try:
            results.append(validate_simulation(landing, args.day or only_day(landing, args.cluster), args.cluster,
                                               args.seed))
        except ValueError as exc:
            raise LbError(f"{landing}: {exc}") from None
    ranking = rank(results) if len(results) > 1 else None
    if args.json:
        print(json.dumps(results[0] if ranking is None else {"runs": results, "ranking": ranking}, indent=2,
                         default=str))
    else:
        print("\n\n".join(render_text(r) for r in results) + (f"\n\n{render_ranking(ranking)}" if ranking else ""))
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    sm = sub.add_parser("simulate", help="every shedding strategy closed-loop over a day, against the baselines, "
                                         "and the strategy and thresholds to run")
    sm.add_argument("--landing", help="landing folder holding the day's snapshots (no Spark needed)")
    sm.add_argument("--lake", help="lake root holding the day's bronze tables")
    sm.add_argument("--day", required=True, type=day, help="UTC day, YYYY-MM-DD")
    sm.add_argument("--cluster", help="the cluster (needed when there are several)")
    sm.add_argument("--strategy", action="append", help="only this strategy (repeatable; default: all five)")
    sm.add_argument("--sets", type=size, default=1, help="parameter sets per strategy, the cluster's own first (default 1)")
    sm.add_argument("--seeds", type=size, default=1, help="seeds per parameter set (default 1)")
    sm.add_argument("--set", action="append", type=key_value, metavar="KEY=VALUE", help="override a Pulsar key for every run")
    sm.add_argument("--profile", default=None, help="Pulsar version profile (default: from the snapshots)")
    sm.add_argument("--json", action="store_true")
    sm.add_argument("--quiet", action="store_true", help="no progress bar")
    sm.set_defaults(func=_simulate)
    vs = sub.add_parser("validate-simulation", help="the simulation of the strategy a recorded cluster ran, scored "
                                                    "against the unloads its leader logged and the usage it reported "
                                                    "(on a day generate --balance wrote: against the unloads of the "
                                                    "generator's own leader, a plumbing check)")
    vs.add_argument("--landing", required=True, action="append",
                    help="landing folder of a recorded run (collect --metadata-store --broker-log, a snapshot a "
                         "minute); repeat it for runs of one workload under different strategies, to compare how "
                         "the simulation ranks them with how they came out")
    vs.add_argument("--day", type=day, help="UTC day, YYYY-MM-DD (default: the one day each landing folder holds)")
    vs.add_argument("--cluster", help="the cluster (needed when there are several)")
    vs.add_argument("--seed", type=int, default=0, help="seed of the strategy's random choices (default 0)")
    vs.add_argument("--json", action="store_true")
    vs.set_defaults(func=_validate_simulation)
