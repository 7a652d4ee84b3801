"""How each broker's resource usage answers the traffic it serves: the load model the simulation runs on.

Pulsar's shedders read ``LocalBrokerData``'s resource usage (CPU, NIC in/out, direct memory, heap), measured by the
broker's host, not computed from traffic. To move bundles in a simulation we need the counterfactual: what a broker
*would* have reported with other bundles. Per broker and resource a robust linear fit (Huber weights by iteratively
reweighted least squares) of usage on the traffic that drives it, with an intercept for the idle cost:

* cpu, memory (heap): message rate (in+out) and throughput (in+out): per-message and per-byte work;
* directMemory: throughput (in+out): buffers scale with bytes in flight;
* bandwidthIn: throughput in; bandwidthOut: throughput out *and in* (a broker sends every write to its bookies).

Usage is fitted in the report's own units; the limit stays the broker's reported limit, so heterogeneous brokers keep
their own capacity. A broker with fewer than ``min_samples`` reports, or whose traffic never varied, uses the
cluster-wide fit (all brokers pooled) and says so in ``source``; so does a broker whose own fit explains its usage
no better than a constant (R² ≤ 0). A report at its limit is censored (``SATURATED``): the broker's demand was above
what it could serve, so its usage says nothing about the slope and is left out of the fit (on a demo day balanced
by OverloadShedder, 5 of a 4-core broker's 24 reports sat at 400 of 400 and pulled its CPU slope from about 0.009 to
0.0032 points per msg/s). Predictions stop at the broker's limit: a host cannot use more CPU or NIC than it has.
Past the most traffic of a kind a broker's fit saw (``max_*``), usage grows by the larger of its own slope and the
cluster's (``beyond_coef_*``): a broker whose messages were all alike put its whole cost on bytes and priced a hot
bundle of small messages at 30 % where it was at its limit (a generated S day, broker-20).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

RESOURCES = ("cpu", "memory", "direct_memory", "bandwidth_in", "bandwidth_out")
TRAFFIC = ("rate", "tput_in", "tput_out")  # rate = msg/s in+out, throughputs in bytes/s
FEATURES = {"cpu": ("rate", "tput"), "memory": ("rate", "tput"), "direct_memory": ("tput",),
            "bandwidth_in": ("tput_in",), "bandwidth_out": ("tput_in", "tput_out")}
MIN_SAMPLES = 8
# a report at (or within 1 % of) its limit is censored: the broker served what it could, its demand was more, and
# its usage says nothing about how usage grows with traffic (left out of the fit, counted in ``censored``)
SATURATED = 0.99
MODEL_COLUMNS = ["broker", "resource", "source", "intercept", "coef_rate", "coef_tput_in", "coef_tput_out",
                 "r2", "residual_std", "samples", "censored"]
# the traffic the fit saw (the largest of each feature over its samples) and the cluster's slopes, used past it
RANGE_COLUMNS = ["max_rate", "max_tput_in", "max_tput_out", "beyond_coef_rate", "beyond_coef_tput_in",
                 "beyond_coef_tput_out"]
SLOPES = ("coef_rate", "coef_tput_in", "coef_tput_out")
# a broker is said to be extrapolated when its traffic is past this multiple of the most its fit saw
EXTRAPOLATED = 1.25


def traffic_features(rate, tput_in, tput_out) -> dict[str, np.ndarray]:
    rate, tput_in, tput_out = (np.asarray(x, dtype=np.float64) for x in (rate, tput_in, tput_out))
    return {"rate": rate, "tput": tput_in + tput_out, "tput_in": tput_in, "tput_out": tput_out}


def huber_fit(x: np.ndarray, y: np.ndarray, iterations: int = 20, k: float = 1.345) -> np.ndarray:
    """Coefficients (intercept first) of the Huber M-estimate: outliers (a GC pause, a noisy neighbour) weigh less
    instead of pulling the fit. Columns are scaled for conditioning and the answer scaled back."""
    scale = np.where(np.abs(x).max(axis=0) > 0, np.abs(x).max(axis=0), 1.0)
    a = np.column_stack([np.ones(len(y)), x / scale])
    w = np.ones(len(y))
    beta = np.zeros(a.shape[1])
    for _ in range(iterations):
        sw = np.sqrt(w)
        beta_new = np.linalg.lstsq(a * sw[:, None], y * sw, rcond=None)[0]
        r = y - a @ beta_new
        mad = np.median(np.abs(r - np.median(r))) / 0.6745
        if not mad > 1e-12:
            beta = beta_new
            break
        u = np.abs(r) / (k * mad)
        w = np.where(u <= 1, 1.0, 1.0 / np.maximum(u, 1e-12))
        done = np.allclose(beta_new, beta, rtol=1e-9, atol=1e-12)
        beta = beta_new
        if done:
            break
    return np.concatenate([[beta[0]], beta[1:] / scale])


def _fit_one(features: dict[str, np.ndarray], usage: np.ndarray, resource: str) -> dict:
    """Slopes are kept non-negative (serving more cannot cost less): a feature whose slope comes out negative —
    message rate and throughput move together when message sizes do not vary — is dropped and the rest refitted."""
    names = list(FEATURES[resource])
    while True:
        x = np.column_stack([features[n] for n in names]) if names else np.zeros((len(usage), 0))
        beta = huber_fit(x, usage) if names else np.array([float(np.median(usage))])
        negative = [n for n, b in zip(names, beta[1:]) if b < 0]
        if not negative:
            break
        names.remove(min(negative, key=lambda n: beta[1 + names.index(n)]))
    pred = beta[0] + x @ beta[1:]
    resid = usage - pred
    total = float(((usage - usage.mean()) ** 2).sum())
    r2 = 1.0 - float((resid ** 2).sum()) / total if total > 0 else 0.0  # usage that never moved explains nothing
    coef = {"rate": 0.0, "tput_in": 0.0, "tput_out": 0.0}
    for n, b in zip(names, beta[1:]):
        if n == "tput":  # in+out share one slope
            coef["tput_in"] += b
            coef["tput_out"] += b
        else:
            coef[n] += b
    return {"intercept": float(beta[0]), "coef_rate": coef["rate"], "coef_tput_in": coef["tput_in"],
            "coef_tput_out": coef["tput_out"], "r2": r2, "residual_std": float(resid.std()), "samples": len(usage)}


def _varies(features: dict[str, np.ndarray], resource: str) -> bool:
    return all(np.ptp(features[n]) > 0 for n in FEATURES[resource])


def fit_load_model(reports: pd.DataFrame, min_samples: int = MIN_SAMPLES) -> pd.DataFrame:
    """One row per (broker, resource) of ``reports`` (bronze ``broker_reports`` rows of one cluster): the fit, its
    quality and whether it is the broker's own (``broker``) or the pooled one (``cluster``)."""
    if reports.empty:
        raise ValueError("no broker reports to fit a load model on")
    # the rows in one order whatever order they came in (Spark's depends on its plan): least squares sums them
    order = [c for c in ("broker", "snapshot_ts", "msg_rate_in", "msg_rate_out", "msg_throughput_in",
                         "msg_throughput_out", *(f"{r}_usage" for r in RESOURCES)) if c in reports.columns]
    reports = reports.sort_values(order, kind="stable", ignore_index=True)
    ok = reports.dropna(subset=["msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out"])
    pooled = {}
    for r in RESOURCES:
        fit_on = ok[~_censored(ok, r)]
        if fit_on.empty:  # every report at its limit: nothing says how usage follows traffic below it
            fit_on = ok
        feats_all = traffic_features(fit_on.msg_rate_in + fit_on.msg_rate_out, fit_on.msg_throughput_in,
                                     fit_on.msg_throughput_out)
        pooled[r] = {**_fit_one(feats_all, fit_on[f"{r}_usage"].to_numpy(float), r), **_range(feats_all)}
    rows = []
    for broker in sorted(reports["broker"].unique()):
        mine = ok[ok["broker"] == broker]
        for r in RESOURCES:
            censored = _censored(mine, r)
            kept = mine[~censored]
            feats = traffic_features(kept.msg_rate_in + kept.msg_rate_out, kept.msg_throughput_in, kept.msg_throughput_out)
            usage = kept[f"{r}_usage"].to_numpy(float)
            own = _fit_one(feats, usage, r) if len(kept) >= min_samples and _varies(feats, r) else None
            beyond = {f"beyond_{c}": pooled[r][c] for c in SLOPES}
            if own is not None and own["r2"] > 0:
                rows.append({"broker": broker, "resource": r, "source": "broker", **own, **_range(feats), **beyond,
                             "censored": int(censored.sum())})
            else:  # too little history below the limit, or a fit no better than a constant
                rows.append({"broker": broker, "resource": r, "source": "cluster", **pooled[r], **beyond,
                             "censored": int(censored.sum())})
    return pd.DataFrame(rows, columns=MODEL_COLUMNS + RANGE_COLUMNS)


def _range(features: dict[str, np.ndarray]) -> dict:
    """The most traffic of each kind the fit's samples held."""
    return {f"max_{n}": float(features[n].max()) if len(features[n]) else 0.0 for n in ("rate", "tput_in", "tput_out")}


def _censored(reports: pd.DataFrame, resource: str) -> pd.Series:
    """Reports whose usage of ``resource`` is at its limit (a positive limit: off Linux a NIC reports -1)."""
    limit = reports[f"{resource}_limit"].astype(float) if f"{resource}_limit" in reports else None
    if limit is None:
        return pd.Series(False, index=reports.index)
    return (limit > 0) & (reports[f"{resource}_usage"].astype(float) >= SATURATED * limit)


@dataclass
class LoadModel:
    """Coefficient arrays (brokers × resources) for fast prediction of every broker's usage in one cycle."""

    brokers: list[str]
    intercept: np.ndarray
    coef: np.ndarray  # (brokers, resources, 3): rate, tput_in, tput_out
    upper: np.ndarray | None = None  # (brokers, resources, 3): the most traffic each fit saw (None: no bound)
    beyond: np.ndarray | None = None  # (brokers, resources, 3): the slopes past it

    @classmethod
    def from_table(cls, table: pd.DataFrame, brokers: list[str]) -> "LoadModel":
        """A table without the fit's range (written before it was kept) extrapolates each broker's own fit."""
        missing = sorted(set(brokers) - set(table["broker"]))
        if missing:
            raise ValueError(f"no load-model fit for broker(s) {', '.join(missing)}")
        t = table.set_index(["broker", "resource"])

        def cube(columns):
            return np.array([[[t.loc[(b, r), c] for c in columns] for r in RESOURCES] for b in brokers],
                            dtype=np.float64)

        intercept = np.array([[t.loc[(b, r), "intercept"] for r in RESOURCES] for b in brokers], dtype=np.float64)
        if not set(RANGE_COLUMNS) <= set(t.columns) or t[RANGE_COLUMNS].isna().any().any():
            return cls(list(brokers), intercept, cube(SLOPES))
        return cls(list(brokers), intercept, cube(SLOPES), cube(RANGE_COLUMNS[:3]), cube(RANGE_COLUMNS[3:]))

    def predict(self, traffic: np.ndarray, limits: np.ndarray | None = None) -> np.ndarray:
        """Usage (brokers × resources) for per-broker traffic (brokers × 3: rate, tput_in, tput_out): never below 0,
        never above a positive limit (brokers × resources). Past the most traffic of a kind a broker's fit saw, the
        usage grows from the fit's figure there by the larger of its own slope and the cluster's: a broker whose
        messages were all alike cannot tell its cost per message from its cost per byte, and a bundle of other
        messages would be priced by the wrong one (``extrapolated`` says where)."""
        if self.upper is None:
            usage = self.intercept + np.einsum("brc,bc->br", self.coef, traffic)
        else:
            x = traffic[:, None, :]
            seen = np.minimum(x, self.upper)
            past = x - seen
            usage = (self.intercept + np.einsum("brc,brc->br", self.coef, seen)
                     + np.maximum(np.einsum("brc,brc->br", self.coef, past), np.einsum("brc,brc->br", self.beyond, past)))
        usage = np.maximum(usage, 0.0)
        if limits is not None:
            usage = np.where(limits > 0, np.minimum(usage, limits), usage)
        return usage

    def extrapolated(self, traffic: np.ndarray) -> np.ndarray:
        """Per broker: its traffic (brokers × 3) is past ``EXTRAPOLATED`` times the most of that kind its CPU fit
        saw, where the model is an extrapolation."""
        if self.upper is None:
            return np.zeros(len(traffic), dtype=bool)
        return (traffic > EXTRAPOLATED * self.upper[:, RESOURCES.index("cpu"), :]).any(axis=1)
