"""The report's "Which strategy for this cluster" section: runs against the baselines, the recommendation, and
the load spread over the day per run (gold tables of the simulation; small, safe to collect)."""

from __future__ import annotations

import json

from pyspark.sql import functions as F

from lb_pipeline.simulation.balancers import STRATEGIES
from lb_pipeline.simulation.decision import spread
from lb_pipeline.simulation.real_validation import TARGETS
from lb_pipeline.simulation.sweep import pareto_front

POINTS = 120  # per series in the chart: enough for a day's shape, small enough for the file


def simulation_context(read) -> dict | None:
    runs_df, rec_df, ts_df = (read("gold", t) for t in ("simulation_runs", "recommendations", "simulation_timeseries"))
    if runs_df is None or ts_df is None:
        return None
    runs = [r.asDict() for r in runs_df.collect()]
    for r in runs:
        r["spread"] = spread(r)
        r["params"] = ", ".join(f"{k}={v}" for k, v in sorted(json.loads(r["params"] or "{}").items())) or "as configured"
        # a day too short or broken to simulate leaves its runs without figures (the rationale says why)
        r["simulated"] = r["spread"] is not None and r["reconnections"] is not None
    # what a planner reads first: overloaded broker-minutes, then the spread among unpinned brokers, then churn
    runs.sort(key=lambda r: (not r["simulated"], r["overloaded_broker_minutes"] or 0, r["spread"] or 0.0,
                             r["reconnections"] or 0, r["run_id"]))
    front = {f["run_id"] for f in pareto_front([{**r, "imbalance": r["spread"], "churn": r["reconnections"]}
                                                for r in runs if r["strategy"] in STRATEGIES and r["simulated"]])}
    for r in runs:
        r["on_front"] = r["run_id"] in front
    rec = rec_df.collect()[0].asDict() if rec_df is not None and rec_df.count() else None
    if rec:
        rec["commands"] = [c for c in (rec["commands"] or "").split("\n") if c]
    col = "usage_std_unpinned" if "usage_std_unpinned" in ts_df.columns else "usage_std"
    rows = ts_df.select("run_id", "strategy", "ts", F.col(col).alias("spread")).orderBy("run_id", "ts").collect()
    series: dict[str, list[float]] = {}
    stamps: list = []
    for r in rows:
        series.setdefault(f"{r.strategy} ({r.run_id.rsplit('#', 1)[-1]})", []).append(float(r.spread))
        if len(series) == 1:
            stamps.append(r.ts)
    step = max(1, len(stamps) // POINTS)
    series = {name: values[::step] for name, values in series.items()}
    marks = stamps[::step]
    labels = time_labels(marks)
    notes = sorted({n for r in runs for n in (r["notes"] or "").split("; ") if n.startswith(("bundle traffic", "bundles split", "no topic-level stats"))})
    checked = [r for r in runs if r.get("recorded_unloads") is not None]
    return {"runs": runs, "recommendation": rec, "series": series, "labels": labels, "notes": notes,
            "validation": checked[0] if checked else None, "against_log": against_log(read)}


def generated(tools: list[str | None]) -> bool:
    """Every snapshot of the night (``tools``: their manifests' ``tool``) was written by ``lb-pipeline generate``:
    its moves are scripted or made by lb_pipeline's own shedding code (``generate --balance``), the code the replay
    runs, so agreeing with them checks the plumbing, not the fidelity to Pulsar."""
    return bool(tools) and all(t is not None and t.startswith("lb_pipeline ") and t.endswith(" generate") for t in tools)


def time_labels(marks: list, most: int = 7) -> list[tuple[int, str]]:
    """(index, "HH:MM") of a few of ``marks`` (timestamps, in order): whole hours every 1, 2, 3, 4, 6 or 12 hours,
    the first spacing that gives at most ``most``; a span with no whole hour marks its first and last."""
    hours = [(i, m) for i, m in enumerate(marks) if m.minute == 0 and m.second == 0]
    for every in (1, 2, 3, 4, 6, 12):
        chosen = [(i, m.strftime("%H:%M")) for i, m in hours if m.hour % every == 0]
        if 2 <= len(chosen) <= most:
            return chosen
    return [(0, marks[0].strftime("%H:%M")), (len(marks) - 1, marks[-1].strftime("%H:%M"))] if len(marks) > 1 else []


def against_log(read) -> dict | None:
    """The cluster's ``gold/simulation_validation`` row (the closed loop of its own strategy against its leader's
    log), with each figure's target and whether it is met; None where the table is not written."""
    df = read("gold", "simulation_validation")
    rows = [r.asDict() for r in df.collect()] if df is not None else []
    if not rows:
        return None
    row = rows[0]
    row["scored"] = row["logged_unloads"] is not None
    row["targets"] = TARGETS
    row["met"] = {k: None if row.get(k) is None else (row[k] <= t if k.startswith("usage") else row[k] >= t)
                  for k, t in TARGETS.items()}
    row["notes"] = [n for n in (row["notes"] or "").split("; ") if n]
    return row


def decided(sim: dict | None, configured: str) -> dict:
    """The report's one decision, from ``gold/recommendations``: keep or change, to what, how sure, and the strategy
    whose moves the actions follow (the decided one where it is replayed, else the configured one)."""
    rec = (sim or {}).get("recommendation") or {}
    change = rec.get("decision") == "change" and bool(rec.get("strategy"))
    act_as = rec["strategy"] if change and rec["strategy"] in STRATEGIES else configured
    trust = (sim or {}).get("against_log")
    return {"simulated": bool(rec), "change": change, "strategy": rec.get("strategy") if change else configured,
            "configured": configured, "act_as": act_as, "rationale": rec.get("rationale"),
            "broker_conf": rec.get("broker_conf") or "", "commands": rec.get("commands") or [],
            "gain": rec.get("gain"), "gain_low": rec.get("gain_low"), "gain_high": rec.get("gain_high"),
            "current_imbalance": rec.get("current_imbalance"), "candidate_imbalance": rec.get("candidate_imbalance"),
            "candidate": rec.get("candidate_strategy"), "nights_agreeing": rec.get("nights_agreeing"),
            "nights_seen": rec.get("nights_seen"), "worse_than_none": bool(rec.get("worse_than_none")),
            "worse_by": rec.get("worse_by"), "baseline_imbalance": rec.get("baseline_imbalance"),
            "trust": trust if trust and trust.get("scored") else None, "basis": rec.get("basis"),
            "current_overloaded": rec.get("current_overloaded"), "candidate_overloaded": rec.get("candidate_overloaded")}
