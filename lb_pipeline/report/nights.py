"""The report's "Last nights" section: tonight's figures against the mean of the 7 and 30 nights before it
(``transforms.nights`` rows: a few per night, safe to collect)."""

from __future__ import annotations

from collections.abc import Collection

from lb_pipeline.transforms.nights import compare

LABELS = {"peak_usage": ("Peak broker usage", "pct"), "mean_usage": ("Mean broker usage", "pct"),
          "brokers": ("Brokers reporting", "num"), "brokers_overloaded": ("Brokers above the overload threshold", "num"),
          "unloads": ("Unloads the configured strategy decided", "num"),
          "splits": ("Bundles a split would help", "num"), "critical_findings": ("Critical findings", "num"),
          "warning_findings": ("Warnings among the findings", "num")}
SHOWN = 7  # nights listed one by one


def nights_context(rows: list[dict], cluster: str, day: str, partial: Collection[str] = ()) -> dict:
    """``rows``: ``night_metrics`` rows; the comparison is ``transforms.nights.compare`` (as in ``gold/night_trends``),
    with the labels the page shows and the last nights one by one (``partial``: nights that stopped half-way, listed
    as such and left out of the means)."""
    c = compare(rows, cluster, day, partial)
    metrics = [{**m, "label": LABELS[m["name"]][0], "format": LABELS[m["name"]][1]} for m in c["metrics"]]
    return {"earlier": c["earlier"], "windows": c["windows"], "metrics": metrics, "recent": c["nights"][:SHOWN],
            "partial": c["partial"]}


def findings_trend(rows: list[dict], cluster: str, day: str, nights: int = SHOWN) -> list[dict]:
    """Findings per severity for each of the last ``nights`` nights up to ``day``, newest first (none when the lake
    holds no findings table)."""
    mine = sorted((r for r in rows if r["cluster"] == cluster and r["snapshot_date"] <= day
                   and r["critical_findings"] is not None), key=lambda r: r["snapshot_date"], reverse=True)
    return [{"night": r["snapshot_date"], "critical": r["critical_findings"], "warning": r["warning_findings"],
             "info": r["info_findings"]} for r in mine[:nights]]
