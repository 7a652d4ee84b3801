"""How often the capacity forecast's 5-95 % band held what came next: forecast from the first k nights of a
history, scored on the nights after, for every k (``benchmarks/backtest_forecast.py``, docs/capacity.md).

The forecasts are ``gold/capacity_forecast``'s own (``capacity.forecast_cluster`` on the same per-snapshot rows);
the outcome of a broker is its daily peak of max usage, that of a failure domain or the cluster the daily peak of
the series the forecast was fitted to (``capacity._pooled`` over the brokers of the forecast's last night). A
night whose brokers are not those of the forecast's last night (one added or removed since) is scored apart: the
forecast reads the history against the capacity it had, and cannot know of a change still to come.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from lb_pipeline.model.usage import max_resource_usage, percents
from lb_pipeline.snapshots import layout
from lb_pipeline.transforms.capacity import MAX_USAGE, RESOURCES, _pooled, forecast_cluster

_REPORT_KEYS = {"cpu": "cpu", "memory": "memory", "direct_memory": "directMemory", "bandwidth_in": "bandwidthIn",
                "bandwidth_out": "bandwidthOut"}


def landing_usage(snapshots: list[Path]) -> pd.DataFrame:
    """``capacity_inputs`` rows (percent usage of each resource, its limit, the failure domain) read from the
    brokers' load reports of generated or collected snapshot folders, as ``silver/broker_usage`` computes them."""
    rows = []
    for snap in snapshots:
        ts = pd.Timestamp(f"{snap.name[:10]} {snap.name[11:19].replace('-', ':')}", tz="UTC")
        domains_file = snap / layout.FAILURE_DOMAINS
        domains = json.loads(domains_file.read_text()) if domains_file.is_file() else {}
        domain_of = {b: d for d, v in sorted(domains.items(), reverse=True) for b in v.get("brokers", [])}
        for f in sorted((snap / "lb" / "brokers").glob("*.json")):
            report, broker = json.loads(f.read_text()), layout.broker_from_file_stem(f.stem)
            pct = percents(report)
            row = {"cluster": snap.parent.name, "snapshot_ts": ts, "snapshot_date": snap.name[:10], "broker": broker,
                   MAX_USAGE: max_resource_usage(report) * 100.0, "domain": domain_of.get(broker)}
            for resource, (pct_col, limit_col) in RESOURCES.items():
                key = _REPORT_KEYS[resource]
                row[pct_col], row[limit_col] = pct[key], float((report.get(key) or {}).get("limit", 0.0))
            rows.append(row)
    return pd.DataFrame(rows)


def _daily_peaks(series: pd.Series) -> pd.Series:
    ts = pd.to_datetime(series.index, utc=True)
    return series.groupby(ts.strftime("%Y-%m-%d")).max()


def backtest(pdf: pd.DataFrame, threshold: float, resource: str = MAX_USAGE, first: int = 3) -> pd.DataFrame:
    """One row per (forecast night, scope, subject, night ahead): the band, the expected peak and what came."""
    days = sorted(pdf["snapshot_date"].unique())
    brokers_on = {d: frozenset(pdf.loc[pdf["snapshot_date"] == d, "broker"]) for d in days}
    rows = []
    for k in range(first, len(days)):
        cut = days[k - 1]
        history = pdf[pdf["snapshot_date"] <= cut]
        out = forecast_cluster(history, cut, threshold)
        out = out[(out["resource"] == resource) & (out["status"] != "not enough history")]
        now = brokers_on[cut]
        for _, f in out.iterrows():
            if f["scope"] == "broker":
                g = pdf[pdf["broker"] == f["subject"]].set_index("snapshot_ts")
                actual = _daily_peaks(g[resource if resource == MAX_USAGE else RESOURCES[resource][0]])
            else:
                g = pdf if f["scope"] == "cluster" else pdf[pdf["domain"] == f["subject"]]
                known = history[history["broker"].isin(g["broker"])]
                members = set(known.loc[known["snapshot_date"] == cut, "broker"])
                # against the capacity the forecast read the history by: its group's at the forecast's last snapshot
                actual = _daily_peaks(_pooled(g, resource, members, reference=known).dropna())
            for h, day in enumerate(days[k:]):
                if day not in actual.index or h >= len(f["forecast"]):
                    continue
                rows.append({"forecast_night": cut, "scope": f["scope"], "subject": f["subject"], "night": day,
                             "ahead": h + 1, "low": f["forecast_low"][h], "expected": f["forecast"][h],
                             "high": f["forecast_high"][h], "actual": float(actual[day]),
                             "same_brokers": brokers_on[day] == now})
    out = pd.DataFrame(rows)
    if not out.empty:
        out["inside"] = (out["low"] <= out["actual"]) & (out["actual"] <= out["high"])
    return out


def coverage(scored: pd.DataFrame) -> pd.DataFrame:
    """Per scope, and per scope with the same brokers only: outcomes, the share inside the band, its median width
    and the median absolute error of the expected peak (points)."""
    if scored.empty:
        return pd.DataFrame(columns=["scope", "brokers", "outcomes", "inside", "median_width", "median_error"])
    parts = []
    for label, part in (("all nights", scored), ("same brokers", scored[scored["same_brokers"]])):
        for scope, g in part.groupby("scope", sort=True):
            parts.append({"scope": scope, "brokers": label, "outcomes": len(g), "inside": float(g["inside"].mean()),
                          "median_width": float(np.median(g["high"] - g["low"])),
                          "median_error": float(np.median(np.abs(g["actual"] - g["expected"])))})
    return pd.DataFrame(parts)
