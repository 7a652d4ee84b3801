"""``gold/recommendations``: per cluster and night, keep or change the strategy against the cluster's own
configuration (``simulation.decision``), from the night's runs, their cycles and the earlier nights' verdicts (all
small tables: runs, runs × cycles, nights)."""

from __future__ import annotations

import json

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.simulation.decision import decide
from lb_pipeline.transforms.simulation import _names


RECOMMENDATION_SCHEMA = ("cluster string, snapshot_date string, strategy string, params string, rationale string, "
                         "broker_conf string, commands string, decision string, verdict string, "
                         "current_strategy string, current_imbalance double, baseline_imbalance double, "
                         "candidate_strategy string, candidate_imbalance double, gain double, gain_low double, "
                         "gain_high double, nights_agreeing int, nights_seen int, worse_than_none boolean, "
                         "worse_by double, basis string, current_overloaded double, candidate_overloaded double")


def recommendations(runs: DataFrame, config: PulsarConfig | ClusterConfigs, timeseries: DataFrame | None = None,
                    earlier: DataFrame | None = None) -> pd.DataFrame:
    """Per cluster, from the (small) runs table: keep or change the strategy against the cluster's own
    configuration (``simulation.decision``), why, and the commands. ``timeseries``: the night's
    ``gold/simulation_timeseries`` (each run's spread cycle by cycle: the uncertainty); ``earlier``: the
    ``gold/recommendations`` rows of the nights before (the stability)."""
    out = []
    pdf = runs.toPandas()
    col = "usage_std_unpinned" if timeseries is not None and "usage_std_unpinned" in timeseries.columns else "usage_std"
    spread = (timeseries.select("cluster", "run_id", "ts", F.col(col).alias("spread"), "overloaded_brokers")
              .orderBy("cluster", "run_id", "ts").toPandas() if timeseries is not None
              else pd.DataFrame(columns=["cluster", "run_id", "ts", "spread", "overloaded_brokers"]))
    before = (earlier.select("cluster", "snapshot_date", "verdict").toPandas() if earlier is not None
              else pd.DataFrame(columns=["cluster", "snapshot_date", "verdict"]))
    for (cluster, day), group in pdf.groupby(["cluster", "snapshot_date"]):
        rows = [{**r, "params": json.loads(r["params"])} for r in group.to_dict("records")]
        mine = spread[spread["cluster"] == cluster]
        cycles = {run_id: [float(v) for v in g["spread"]] for run_id, g in mine.groupby("run_id")}
        own = ClusterConfigs.of_any(config).of(cluster)
        hot = {run_id: [float(v) for v in g["overloaded_brokers"]] for run_id, g in mine.groupby("run_id")}
        history = (before[(before["cluster"] == cluster) & (before["snapshot_date"] < day)]
                   .sort_values("snapshot_date", ascending=False).to_dict("records"))
        rec = decide(rows, own, cycles, history, hot)
        out.append({"cluster": cluster, "snapshot_date": day, **{k: rec[k] for k in _names(RECOMMENDATION_SCHEMA)
                                                                  if k in rec and k != "params" and k != "commands"},
                    "params": json.dumps(rec["params"], sort_keys=True), "commands": "\n".join(rec["commands"])})
    return pd.DataFrame(out, columns=_names(RECOMMENDATION_SCHEMA))
