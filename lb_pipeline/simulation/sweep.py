"""Parameter sweeps per strategy, the Pareto front of imbalance against churn, and the recommendation.

Each strategy is swept over its own thresholds (Pulsar key names, ranges around the defaults; overridable). A run's
*imbalance* is the mean over cycles of the standard deviation of brokers' weighted max usage; its *churn* the
client reconnections its moves cost (producers + consumers of every moved bundle). The recommendation is the
front's knee — the run nearest the ideal corner once both axes are scaled to the range the runs span — among the
runs that beat "no balancing" on imbalance; when none does, the recommendation says so instead of inventing one.
"""

from __future__ import annotations

import itertools
import shlex

from lb_pipeline.model.at_start import AT_START_KEYS
from lb_pipeline.model.config import EXTENSIBLE_LOAD_MANAGER, IMPL, MODULAR_LOAD_MANAGER, PulsarConfig
from lb_pipeline.model.load_manager import legacy_reason
from lb_pipeline.simulation.balancers import BASELINES, STRATEGIES

DEFAULT_GRIDS: dict[str, dict[str, list]] = {
    "ThresholdShedder": {"loadBalancerBrokerThresholdShedderPercentage": [5, 10, 20],
                         "loadBalancerHistoryResourcePercentage": [0.5, 0.9],
                         "loadBalancerSheddingGracePeriodMinutes": [10, 30]},
    "OverloadShedder": {"loadBalancerBrokerOverloadedThresholdPercentage": [70, 80, 85, 95],
                        "loadBalancerSheddingGracePeriodMinutes": [10, 30, 60]},
    "UniformLoadShedder": {"loadBalancerMsgRateDifferenceShedderThreshold": [25, 50, 100],
                           "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold": [2, 4],
                           "maxUnloadPercentage": [0.2, 0.5]},
    "AvgShedder": {"loadBalancerAvgShedderLowThreshold": [10, 15],
                   "loadBalancerAvgShedderHighThreshold": [30, 40, 60],
                   "loadBalancerAvgShedderHitCountLowThreshold": [4, 8]},
    "TransferShedder": {"loadBalancerBrokerLoadTargetStd": [0.1, 0.25, 0.4],
                        "loadBalancerSheddingConditionHitCountThreshold": [1, 3],
                        "loadBalancerSheddingGracePeriodMinutes": [10, 30]},
}
# ServiceConfiguration fields with ``dynamic = true`` in pulsar-broker-common 4.0.8 (read by reflection)
DYNAMIC_KEYS = frozenset({
    "loadManagerClassName", "loadBalancerLoadSheddingStrategy", "loadBalancerSheddingEnabled",
    "loadBalancerSheddingIntervalMinutes", "loadBalancerSheddingGracePeriodMinutes",
    "loadBalancerBrokerOverloadedThresholdPercentage", "loadBalancerBrokerThresholdShedderPercentage",
    "loadBalancerAvgShedderLowThreshold", "loadBalancerAvgShedderHighThreshold",
    "loadBalancerAvgShedderHitCountLowThreshold", "loadBalancerAvgShedderHitCountHighThreshold",
    "loadBalancerMsgRateDifferenceShedderThreshold", "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold",
    "loadBalancerHistoryResourcePercentage", "loadBalancerBundleUnloadMinThroughputThreshold", "maxUnloadPercentage",
    "loadBalancerBrokerLoadTargetStd", "loadBalancerSheddingConditionHitCountThreshold", "loadBalancerTransferEnabled",
})


def param_sets(strategy: str, config: PulsarConfig, grid: dict[str, list] | None = None, limit: int | None = None) -> list[dict]:
    """Every combination of ``grid`` (default: the strategy's), or ``limit`` of them spread evenly over the product."""
    if strategy not in DEFAULT_GRIDS:
        raise ValueError(f"unknown strategy {strategy!r}; known: {', '.join(DEFAULT_GRIDS)}")
    grid = DEFAULT_GRIDS[strategy] if grid is None else grid
    unknown = sorted(k for k in grid if k not in config)
    if unknown:
        raise ValueError(f"{strategy} sweep: unknown Pulsar configuration key(s) {', '.join(unknown)}")
    keys = sorted(grid)
    combos = [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]
    if limit and len(combos) > limit:
        step = len(combos) / limit
        combos = [combos[int(i * step)] for i in range(limit)]
    return combos


def pareto_front(runs: list[dict]) -> list[dict]:
    """Runs no other run beats on both imbalance and churn (ties kept), ordered by imbalance."""
    front = [r for r in runs if not any(
        o["imbalance"] <= r["imbalance"] and o["churn"] <= r["churn"]
        and (o["imbalance"] < r["imbalance"] or o["churn"] < r["churn"]) for o in runs)]
    return sorted(front, key=lambda r: (r["imbalance"], r["churn"]))


# the least a change must spread the load better (the standard deviation of broker usage, averaged over the day) to
# be worth the client reconnections it costs: less is noise no broker notices (two brokers both at 99.9 % gave
# "15 % below no balancing" for 0.005 points)
MATERIAL_GAIN = 0.01


def recommend(runs: list[dict], baseline_imbalance: float, config: PulsarConfig, reference: str = "no balancing") -> dict:
    """``runs``: dicts with strategy, params, imbalance, churn; ``baseline_imbalance``: that of ``reference``, the run
    they must beat. Returns the choice, why, and how to apply it."""
    better = [r for r in runs if r["imbalance"] <= baseline_imbalance - MATERIAL_GAIN]
    if not better:
        closest = min(runs, key=lambda r: r["imbalance"], default=None)
        gap = baseline_imbalance - closest["imbalance"] if closest else 0.0
        alone = "leaving ownership alone" if reference == "no balancing" else reference
        return {"strategy": None, "params": {}, "rationale": (
            f"no simulated strategy balanced this history better than {alone} by a point of broker "
            "usage or more" + (f" (the closest, {closest['strategy']}, by {gap * 100:.2f})" if gap > 0 else "")
            + "; keep the current configuration"), "broker_conf": "", "commands": []}
    front = pareto_front(better)
    lo_i, hi_i = min(r["imbalance"] for r in better), max(r["imbalance"] for r in better)
    lo_c, hi_c = min(r["churn"] for r in better), max(r["churn"] for r in better)
    scale = lambda x, lo, hi: (x - lo) / (hi - lo) if hi > lo else 0.0  # noqa: E731
    best = min(front, key=lambda r: (scale(r["imbalance"], lo_i, hi_i) ** 2 + scale(r["churn"], lo_c, hi_c) ** 2,
                                     r["strategy"], sorted(r["params"].items())))
    settings = settings_for(best["strategy"], best["params"], config)
    gain = 1 - best["imbalance"] / baseline_imbalance if baseline_imbalance > 0 else 0.0
    rationale = (f"{best['strategy']} with {describe(best['params'])}: load spread {gain:.0%} below {reference} at "
                 f"{best['churn']:,} client reconnections; the knee of a front of {len(front)} of {len(runs)} runs")
    return {"strategy": best["strategy"], "params": best["params"], "rationale": rationale,
            "broker_conf": "\n".join(f"{k}={v}" for k, v in settings.items()),
            # loadManagerClassName last: the load manager it creates on each broker reads the strategies set before
            "commands": commands_for(settings, config)}


def commands_for(settings: dict[str, str], config: PulsarConfig) -> list[str]:
    """The admin commands that apply ``settings`` on a running cluster, in order, and a shell comment for what no
    command can do. Moving between the modular and the extensible load manager is not one of them: Pulsar's
    migration guide supports it only through every broker's ``broker.conf`` and a restart of the cluster (during
    the migration lookups go to the brokers that already run the new one), so no command is printed for it."""
    switch = settings.get("loadManagerClassName")
    if switch and {switch, config["loadManagerClassName"]} == {MODULAR_LOAD_MANAGER, EXTENSIBLE_LOAD_MANAGER}:
        return [f"# loadManagerClassName from {config['loadManagerClassName'].rsplit('.', 1)[-1]} to "
                f"{switch.rsplit('.', 1)[-1]}: pulsar-admin cannot make this change; set the broker.conf lines above "
                "on every broker and restart the cluster"]
    return [shlex.join(["pulsar-admin", "brokers", "update-dynamic-config", "--config", k, "--value", str(v)])
            for k, v in sorted(settings.items(), key=lambda kv: kv[0] == "loadManagerClassName")
            if k in DYNAMIC_KEYS] + restart_note(settings)


def restart_note(settings: dict[str, str]) -> list[str]:
    """A shell comment for the keys a broker's load manager reads only when it starts (``model.at_start``): set
    dynamically or in ``broker.conf``, they change nothing until each broker restarts (the leader, and whichever
    broker becomes the leader next)."""
    keys = [k for k in AT_START_KEYS if k in settings]
    if not keys or "loadManagerClassName" in settings:  # a new load manager class: every broker creates one at once
        return []
    return [f"# {' and '.join(keys)} take{'s' if len(keys) == 1 else ''} effect when a broker's load manager starts: "
            "restart the brokers one at a time"]


def settings_for(strategy: str, params: dict, config: PulsarConfig) -> dict[str, str]:
    """The configuration lines that select ``strategy`` and set its parameters."""
    out: dict[str, str] = {}
    if strategy == "TransferShedder":
        out["loadManagerClassName"] = EXTENSIBLE_LOAD_MANAGER
    else:  # a modular strategy runs only under the modular load manager (the extensible one would run TransferShedder)
        out["loadManagerClassName"] = MODULAR_LOAD_MANAGER
        out["loadBalancerLoadSheddingStrategy"] = IMPL + strategy
        if strategy == "AvgShedder":  # AvgShedder places by its own plans only as the placement strategy too
            out["loadBalancerLoadPlacementStrategy"] = IMPL + "AvgShedder"
        elif legacy_reason(config.overridden(**out)):  # AvgShedder placement beside another shedding strategy, or
            # a placement class Pulsar lacks: ModularLoadManagerImpl would not start (model.load_manager)
            out["loadBalancerLoadPlacementStrategy"] = IMPL + "LeastLongTermMessageRate"
    out.update({k: str(v) for k, v in sorted(params.items())})
    return {k: v for k, v in out.items() if config.get(k) != v}


def describe(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(params.items())) or "the defaults"


def run_list(config: PulsarConfig, strategies=STRATEGIES, grids: dict | None = None, sets_per_strategy: int = 1,
             seeds=(0,)) -> list[dict]:
    """The runs of a night: per strategy its parameter sets (the cluster's own configuration first), per seed;
    the two baselines once."""
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategy {unknown[0]!r}; known: {', '.join(STRATEGIES)}")
    runs = [{"strategy": b, "params": {}, "seed": 0} for b in BASELINES]
    for strategy in strategies:
        sets = [{}] + param_sets(strategy, config, (grids or {}).get(strategy), max(0, sets_per_strategy - 1) or None)
        for params in sets[:sets_per_strategy]:
            runs += [{"strategy": strategy, "params": params, "seed": seed} for seed in seeds]
    return [{**r, "run_id": f"{r['strategy']}#{k}"} for k, r in enumerate(runs)]
