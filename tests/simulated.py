"""Scripted cluster histories for the simulation tests: bronze-shaped broker and bundle rows, and a load model."""

from __future__ import annotations

import pandas as pd

from lb_pipeline.model.bundles import default_boundaries, format_range
from lb_pipeline.simulation.history import build_history
from lb_pipeline.simulation.load_model import MODEL_COLUMNS, RESOURCES, LoadModel

START = pd.Timestamp("2026-01-15T00:00:00Z")


def bundle_names(n: int, ns: str = "t/ns") -> list[str]:
    bounds = default_boundaries(n)
    return [f"{ns}/{format_range(bounds[k], bounds[k + 1])}" for k in range(n)]


def scripted(n_brokers=4, n_bundles=16, snapshots=13, minutes=10, rate=lambda s, k: 1000.0, owner=lambda s, k: 0,
             live=lambda s, b: True, start=lambda s, b: 1, bundles=None, msg_bytes=1000, topics=lambda s, k: 4):
    """Frames of one cluster ``c``: ``owner(s, k)`` the recorded broker of bundle ``k`` at snapshot ``s`` (None:
    absent), ``rate(s, k)`` its msg/s each way (``msg_bytes`` per message)."""
    names = bundles or bundle_names(n_bundles)
    brokers = [f"broker-{b}:8080" for b in range(n_brokers)]
    br, bu = [], []
    for s in range(snapshots):
        ts = START + pd.Timedelta(minutes=minutes * s)
        for b, name in enumerate(brokers):
            if not live(s, b):
                continue
            row = {"cluster": "c", "snapshot_ts": ts, "broker": name, "start_timestamp_ms": start(s, b),
                   "broker_version": "4.0.8", "load_manager": None, "msg_rate_in": 0.0, "msg_rate_out": 0.0,
                   "msg_throughput_in": 0.0, "msg_throughput_out": 0.0}
            for r in RESOURCES:
                row[f"{r}_usage"], row[f"{r}_limit"] = 0.0, 100.0
            br.append(row)
        for k, name in enumerate(names):
            b = owner(s, k)
            if b is None:
                continue
            x = rate(s, k)
            bu.append({"cluster": "c", "snapshot_ts": ts, "broker": brokers[b], "bundle": name, "msg_rate_in": x,
                       "msg_rate_out": x, "msg_throughput_in": x * msg_bytes, "msg_throughput_out": x * msg_bytes,
                       "producer_count": 2, "consumer_count": 3, "topics": topics(s, k)})
    return pd.DataFrame(br), pd.DataFrame(bu)


def cpu_model(brokers, per_msg=0.003, idle=2.0) -> pd.DataFrame:
    """CPU % = idle + per_msg × (msg/s in+out) on every broker; the other resources unused."""
    rows = [{"broker": b, "resource": r, "source": "broker", "intercept": idle if r == "cpu" else 0.0,
             "coef_rate": per_msg if r == "cpu" else 0.0, "coef_tput_in": 0.0, "coef_tput_out": 0.0, "r2": 1.0,
             "residual_std": 0.0, "samples": 10, "censored": 0} for b in brokers for r in RESOURCES]
    return pd.DataFrame(rows, columns=MODEL_COLUMNS)


def history_and_model(**kw):
    brokers, bundles = scripted(**kw)
    h = build_history("c", brokers, bundles)
    return h, LoadModel.from_table(cpu_model(h.brokers), h.brokers)
