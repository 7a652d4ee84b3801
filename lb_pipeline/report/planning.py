"""The report's "Capacity" and "Findings" sections (gold/capacity_forecast and gold/pathologies: small tables,
safe to collect)."""

from __future__ import annotations

import json

from lb_pipeline.model.names import shared_hosts
from lb_pipeline.planning.bundle_loss import METHOD as BY_BUNDLE, TOO_BIG
from lb_pipeline.report.heat import natural_key
from lb_pipeline.transforms.capacity_rows import at_of

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
SOONEST = 10  # brokers listed by how soon they cross
TREND_NIGHTS = 7


def _finite(v) -> bool:
    return v is not None and v == v and abs(v) != float("inf")


def _days(v) -> int | None:
    return None if v is None or v != v else int(v)


def capacity_context(df) -> dict | None:
    if df is None:
        return None
    rows = [r.asDict(recursive=True) for r in df.collect()]
    if not rows:
        return None
    by_scope: dict[str, list[dict]] = {}
    for r in rows:
        for k in ("days_until_threshold", "days_until_threshold_earliest", "days_until_threshold_latest"):
            r[k] = _days(r[k])
        by_scope.setdefault(r["scope"], []).append(r)
    cluster = sorted(by_scope.get("cluster", []), key=lambda r: r["resource"] != "max_usage")
    headline = cluster[0] if cluster else None
    domains = sorted((r for r in by_scope.get("domain", []) if r["resource"] == "max_usage"), key=lambda r: r["subject"])
    never = 10 ** 6
    soonest = sorted((r for r in by_scope.get("broker", []) if r["resource"] == "max_usage"),
                     key=lambda r: (r["days_until_threshold"] if r["days_until_threshold"] is not None else never,
                                    -(r["current_peak"] or 0), natural_key(r["subject"])))[:SOONEST]
    losses = sorted(by_scope.get("loss", []), key=lambda r: (r["subject"] != "largest broker", r["subject"], r["resource"]))
    for r in losses:  # the snapshot each loss is sized at
        r["at"] = at_of(r.get("note"))
    # brokers that share a host each report the host's CPU and NIC: their figures count one machine once per broker,
    # and no loss or brokers to add is sized from them
    shared = shared_hosts([r["subject"] for r in by_scope.get("broker", [])]
                          + [b for r in losses for b in r["lost_brokers"] or []])
    if shared:
        losses = []
    add_now = max((r["brokers_to_add"] or 0 for r in losses), default=0)
    add_later = max((r["brokers_to_add_in_30_days"] or 0 for r in losses), default=0)
    # above the threshold after a loss with no number to add: a threshold of 0 or less, or no capacity reported
    unsizable = next((r for r in losses if r["headroom"] < 0 and r["brokers_to_add"] is None), None)
    why = next((p.split(": ", 1)[1] for p in ((unsizable or {}).get("note") or "").split("; ")
                if p.startswith(TOO_BIG) and ": " in p), None)
    # how the figures were made, once: on the loss with the least headroom (the one a planner reads first)
    sized = min((r for r in losses if r.get("method") == BY_BUNDLE), key=lambda r: r["headroom"], default=None)
    loss_note = f"{sized['subject'].capitalize()} lost ({sized['resource']}), {sized['note']}" if sized else None
    namespaces = sorted((r for r in by_scope.get("namespace", [])
                         if r["current_peak"] >= 0.75 * r["threshold"]
                         or (r["days_until_threshold"] is not None and r["days_until_threshold"] <= 90)),
                        key=lambda r: (r["days_until_threshold"] if r["days_until_threshold"] is not None else never,
                                       r["subject"]))
    # the headline's figure beside the per-broker view and the cluster's capacity ratio (one definition each)
    tonight = [r for r in by_scope.get("broker", []) if r["resource"] == "max_usage" and _finite(r["current_peak"])]
    hottest = min(tonight, key=lambda r: (-r["current_peak"], natural_key(r["subject"])), default=None)
    ratios = [r for r in cluster if r["resource"] not in ("max_usage", "memory") and _finite(r["current_peak"])]
    brokers_view = {"brokers": len(tonight), "hottest": hottest, "binding": max(ratios, key=lambda r: r["current_peak"],
                                                                                   default=None),
                    "at_threshold": sum(1 for r in tonight if r["current_peak"] >= (r["threshold"] or 0))} \
        if tonight else None
    nights = headline["history_days"] if headline else 0
    trend = list(zip(range(-min(nights, TREND_NIGHTS) + 1, 1), (headline["daily_peaks"] or [])[-TREND_NIGHTS:])) \
        if headline else []
    return {"headline": headline, "cluster": cluster, "domains": domains, "soonest": soonest, "losses": losses,
            "add_now": add_now, "add_later": add_later, "unsizable": unsizable, "unsizable_why": why,
            "loss_note": loss_note, "by_bundle": BY_BUNDLE, "namespaces": namespaces, "nights": nights,
            "enough": bool(headline) and headline["status"] != "not enough history", "trend": trend,
            "reached": sum(1 for r in soonest if r.get("note")),  # bands widened to the peers' reach
            "shared": [f"{', '.join(on_it)} on {host}" for host, on_it in shared.items()], "brokers_view": brokers_view}


def findings_context(df) -> list[dict]:
    """Findings grouped by detector, most severe group first: on a large cluster one detector can fire for dozens
    of brokers, and the report lists them under one row that expands."""
    if df is None:
        return []
    groups: dict[str, dict] = {}
    for r in sorted((r.asDict() for r in df.collect()),
                    key=lambda r: (SEVERITY_ORDER.get(r["severity"], 3), natural_key(r["subject"]))):
        try:
            r["evidence_rows"] = len(json.loads(r["evidence"] or "[]"))
        except ValueError:
            r["evidence_rows"] = 0
        g = groups.setdefault(r["detector"], {"detector": r["detector"], "severity": r["severity"], "items": []})
        g["items"].append(r)
    return sorted(groups.values(), key=lambda g: (SEVERITY_ORDER.get(g["severity"], 3), -len(g["items"]), g["detector"]))

