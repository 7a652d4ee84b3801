"""The simulation's runs shared out over the cores: each slot one task that rebuilds a cluster's history once and
runs its share of the runs, the slots ending close together (``transforms.simulation.simulate_runs``)."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import functions as F

from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.simulation.balancers import BASELINES
from lb_pipeline.simulation.validation import is_validated

Runs = list[dict] | Callable[[PulsarConfig], list[dict]]


def runs_of(runs: Runs, config: PulsarConfig) -> list[dict]:
    """The runs of a cluster of this configuration (a sweep starts from its own values)."""
    return runs(config) if callable(runs) else runs


def run_cost(run: dict, config: PulsarConfig) -> float:
    """A run's CPU relative to a strategy's (measured on M): a baseline decides nothing (about half); the cluster's
    own strategy as configured is replayed a second time, anchored, for its precision and recall (about twice)."""
    if run["strategy"] in BASELINES:
        return 0.5
    return 2.0 if is_validated(config, run["strategy"], run["params"], run["seed"]) else 1.0


def slot_plan(runs: list[dict], slots: int, cost) -> list[list[dict]]:
    """``runs`` over ``slots`` (the cores), dearest first, each to the least loaded slot: each slot ships and
    rebuilds a cluster's history once, and the slots end close together."""
    plan, load = [[] for _ in range(max(1, slots))], [0.0] * max(1, slots)
    for run in sorted(runs, key=cost, reverse=True):  # a stable sort: equal costs keep the run order
        k = load.index(min(load))
        plan[k].append(run)
        load[k] += cost(run)
    return [p for p in plan if p]


def spread_keys(spark, n: int) -> list[int]:
    """``n`` integers that Spark's hash partitioning into ``n`` partitions sends to partitions 0, 1, …, n - 1 (its
    partition id is ``pmod(hash(key), n)``; one tiny job asks Spark's own hash)."""
    found: dict[int, int] = {}
    for r in spark.range(64 * n).select(F.col("id").cast("int").alias("k"),
                                        F.pmod(F.hash(F.col("id").cast("int")), F.lit(n)).alias("p")).collect():
        found.setdefault(r["p"], r["k"])
    return [found.get(p, p) for p in range(n)]
