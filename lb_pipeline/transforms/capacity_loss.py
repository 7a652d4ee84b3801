"""``gold/capacity_forecast``'s loss rows: N-1 and each failure domain lost, at the last night's busiest snapshot of each
resource, sized bundle by bundle on demand (``planning.bundle_loss``) where the night's bundles and load model are
there, else spread over the survivors' capacity (``planning.headroom``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lb_pipeline.model.names import shared_hosts
from lb_pipeline.planning import bundle_loss
from lb_pipeline.planning.headroom import losses, scenarios
from lb_pipeline.transforms.capacity_rows import RESOURCES, row as _row, sized_at


def loss_rows(pdf: pd.DataFrame, cluster: str, day: str, threshold: float, growth: dict,
               bundles: pd.DataFrame | None = None, models: pd.DataFrame | None = None) -> list[dict]:
    """N-1 and failure-domain loss at the last night's busiest snapshot of each resource (and 30 days on). Heap is
    left out: a JVM's heap does not follow the bundles it serves (and Pulsar's max usage ignores it too). Brokers
    that share a host each report the host's usage: the rows are sized as the reports say, and their note says that
    is not capacity advice."""
    last = pdf[pdf["snapshot_date"] == pdf["snapshot_date"].max()]
    rows = _sized(last, cluster, day, threshold, growth, bundles, models)
    if shared := shared_hosts(last["broker"]):  # each report counts one machine once per broker on it
        told = "not capacity advice: " + "; ".join(f"{', '.join(b)} share {h} and each reports the host's usage"
                                                   for h, b in shared.items())
        for row in rows:
            row["note"] = "; ".join(n for n in (row["note"], told) if n)
    return rows


def _sized(last: pd.DataFrame, cluster: str, day: str, threshold: float, growth: dict,
           bundles: pd.DataFrame | None, models: pd.DataFrame | None) -> list[dict]:
    """The loss rows of the last night's rows ``last``, sized as its reports say."""
    rows = []
    for r, (pct, lim) in RESOURCES.items():
        if r == "memory":
            continue
        load = last[pct] / 100.0 * last[lim]
        if not load.notna().any():  # no broker reported a limit for this resource
            continue
        busiest = load.groupby(last["snapshot_ts"]).sum().idxmax()
        snap = last[last["snapshot_ts"] == busiest].sort_values("broker")
        at = (snap[pct].to_numpy() / 100.0 * snap[lim].to_numpy())
        domains = [d if isinstance(d, str) else None for d in snap["domain"]]
        args = (snap["broker"].tolist(), domains, np.nan_to_num(at), np.nan_to_num(snap[lim].to_numpy()), threshold)
        whole = _bundle_cluster(snap, at, r, busiest, bundles, models)
        if whole is not None:
            rows += _bundle_loss_rows(whole, domains, at, cluster, day, r, threshold, busiest, growth.get(r),
                                      _model_error(models, snap, r))
            continue
        later = {x.scenario: x for x in losses(*args, growth=growth.get(r, 1.0))} if r in growth else {}
        for x in losses(*args):
            rows.append(_row(cluster, day, "loss", x.scenario, r, threshold, lost_brokers=x.lost,
                             status="ok" if x.headroom >= 0 else "above threshold", method="survivors' capacity",
                             usage_after_loss=x.usage_after, headroom=x.headroom, brokers_to_add=x.brokers_to_add,
                             brokers_to_add_in_30_days=later[x.scenario].brokers_to_add if later else None,
                             note=f"{sized_at(busiest)}; load spread evenly over the survivors"
                                  + ("" if later else "; no 30-day figure without a forecast")))
    return rows


def _model_error(models: pd.DataFrame, snap: pd.DataFrame, resource: str) -> float | None:
    """The load model's typical error on the night's reports, in points of a broker of the cluster's median size."""
    fit = models[models["resource"] == resource]
    limit = float(np.nanmedian(snap[RESOURCES[resource][1]].to_numpy(float))) if len(snap) else 0.0
    error = float(np.nanmedian(fit["residual_std"].to_numpy(float))) if len(fit) else float("nan")
    return 100.0 * error / limit if limit > 0 and np.isfinite(error) else None


def _bundle_cluster(snap: pd.DataFrame, at: np.ndarray, resource: str, busiest, bundles: pd.DataFrame | None,
                    models: pd.DataFrame | None) -> bundle_loss.Cluster | None:
    """The snapshot's brokers and bundles for ``bundle_loss``, each bundle's cost the cluster's median load model's
    on its traffic; None without the bundles of that snapshot or a fit for each of its brokers."""
    if bundles is None or models is None or bundles.empty or models.empty:
        return None
    here = bundles[bundles["snapshot_ts"] == busiest]  # the same conversion as the broker rows': one group
    fit = models[models["resource"] == resource].drop_duplicates("broker").set_index("broker")
    brokers = snap["broker"].tolist()
    if here.empty or not set(brokers) <= set(fit.index):
        return None
    coef = fit[["coef_rate", "coef_tput_in", "coef_tput_out"]].astype(float).median().to_numpy()
    traffic = np.column_stack([here["msg_rate_in"].fillna(0) + here["msg_rate_out"].fillna(0),
                               here["msg_throughput_in"].fillna(0), here["msg_throughput_out"].fillna(0)])
    cost = np.maximum(traffic @ coef, 0.0)
    index = {b: i for i, b in enumerate(brokers)}
    owner = np.array([index.get(o, -1) for o in here["owner_broker"]], dtype=np.int64)
    idle = fit.loc[brokers, "intercept"].astype(float).clip(lower=0).to_numpy()
    served = np.bincount(owner[owner >= 0], weights=cost[owner >= 0], minlength=len(brokers))
    return bundle_loss.Cluster(brokers, np.nan_to_num(snap[RESOURCES[resource][1]].to_numpy(float)), np.nan_to_num(at),
                               idle, idle + served, here["bundle"].tolist(), owner, cost,
                               here["hottest_topic_share"].fillna(1.0).to_numpy(float),
                               here["topics"].fillna(1).to_numpy(float))


def _bundle_loss_rows(c: bundle_loss.Cluster, domains: list, at: np.ndarray, cluster: str, day: str, resource: str,
                      threshold: float, busiest, growth: float | None, error: float | None) -> list[dict]:
    rows = []
    for name, mask in scenarios(c.brokers, domains, at, c.limit):
        x = bundle_loss.survive(c, mask, threshold)
        later = bundle_loss.survive(c, mask, threshold, growth) if growth is not None else None
        note = [f"{sized_at(busiest)}; the hottest survivor once whole bundles are spread as evenly as "
                f"they can be (a topic is never cut); an even spread of the load would give {x.even_after:.1f} %"]
        if error is not None:
            note.append(f"bundle costs from the night's load model, typically {error:.1f} points off a broker's "
                        "report")
        if x.estimated:
            note.append(f"the demand of {', '.join(x.estimated)} is the load model's on its traffic (its report sat "
                        "at its limit)")
        if x.why:
            note.append(f"{bundle_loss.TOO_BIG}: {x.why}")
        if later is None:
            note.append("no 30-day figure without a forecast")
        rows.append(_row(cluster, day, "loss", name, resource, threshold,
                         lost_brokers=[b for b, m in zip(c.brokers, mask) if m],
                         status="ok" if x.usage_after <= threshold else "above threshold", method=bundle_loss.METHOD,
                         usage_after_loss=x.usage_after, headroom=threshold - x.usage_after,
                         brokers_to_add=x.brokers_to_add,
                         brokers_to_add_in_30_days=later.brokers_to_add if later else None, note="; ".join(note)))
    return rows
