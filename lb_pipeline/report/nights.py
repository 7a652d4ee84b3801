"""The report's "Last nights" section: tonight's figures against the mean of the 7 and 30 nights before it
(``transforms.nights`` rows: a few per night, safe to collect)."""

from __future__ import annotations

from lb_pipeline.transforms.nights import METRICS, WINDOWS

LABELS = {"peak_usage": ("Peak broker usage", "pct"), "mean_usage": ("Mean broker usage", "pct"),
          "brokers": ("Brokers reporting", "num"), "brokers_overloaded": ("Brokers above the overload threshold", "num"),
          "unloads": ("Unloads the configured strategy decided", "num"),
          "splits": ("Bundles a split would help", "num"), "critical_findings": ("Critical findings", "num"),
          "warning_findings": ("Warnings among the findings", "num")}
SHOWN = 7  # nights listed one by one


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def nights_context(rows: list[dict], cluster: str, day: str) -> dict:
    """``rows``: ``night_metrics`` rows. Earlier nights are the ones before ``day`` (a re-run of an old night
    ignores later ones); with none, the section says so instead of comparing tonight with itself."""
    mine = sorted((r for r in rows if r["cluster"] == cluster and r["snapshot_date"] <= day),
                  key=lambda r: r["snapshot_date"], reverse=True)
    tonight = next((r for r in mine if r["snapshot_date"] == day), None)
    before = [r for r in mine if r["snapshot_date"] < day]
    windows = [{"nights": w, "held": len(before[:w])} for w in WINDOWS]
    metrics = [{"name": m, "label": LABELS[m][0], "format": LABELS[m][1],
                "tonight": tonight[m] if tonight else None,
                "means": [_mean([r[m] for r in before[:w]]) for w in WINDOWS]} for m in METRICS]
    return {"earlier": len(before), "windows": windows, "metrics": metrics, "recent": mine[:SHOWN]}


def findings_trend(rows: list[dict], cluster: str, day: str, nights: int = SHOWN) -> list[dict]:
    """Findings per severity for each of the last ``nights`` nights up to ``day``, newest first (none when the lake
    holds no findings table)."""
    mine = sorted((r for r in rows if r["cluster"] == cluster and r["snapshot_date"] <= day
                   and r["critical_findings"] is not None), key=lambda r: r["snapshot_date"], reverse=True)
    return [{"night": r["snapshot_date"], "critical": r["critical_findings"], "warning": r["warning_findings"],
             "info": r["info_findings"]} for r in mine[:nights]]
