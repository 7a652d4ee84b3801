"""Every run of a sweep in this process, one after the other: the CLI's path (the nightly job runs them on Spark)."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pandas as pd

from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.load_manager import legacy_reason
from lb_pipeline.model.names import one_line
from lb_pipeline.simulation.leader_averages import leader_averages, stored_every
from lb_pipeline.simulation.bundle_set import TopicProfiles
from lb_pipeline.simulation.history import build_history
from lb_pipeline.simulation.load_model import LoadModel, fit_load_model
from lb_pipeline.simulation.policies import Policies
from lb_pipeline.simulation.run import simulate
from lb_pipeline.simulation.decision import decide, spread


def simulate_all(cluster: str, brokers: pd.DataFrame, bundles: pd.DataFrame, config: PulsarConfig, runs: list[dict],
                 progress: Callable[[int, dict, int, int], None] | None = None,
                 policies: Policies | None = None, topics: pd.DataFrame | None = None,
                 ran: ClusterConfigs | None = None, leader_rows: tuple | None = None) -> dict:
    """Fit the load model, run each of ``runs`` (from ``sweep.run_list``), recommend. Returns a JSON-ready dict.
    ``topics``: topic rows of the bundles that can split; ``ran``: what the leader ran over the day, which the
    validation follows (both from ``landing.read_history``); ``leader_rows``: the leader's stored averages, the
    brokers' logged events, when the averages were written and the bundles' resource quotas (``landing.read_leader``),
    None: not collected."""
    history = build_history(cluster, brokers, bundles)
    if leader_rows:
        averages, events, written, quotas = leader_rows
        leader = leader_averages(history, averages, events, written, stored_every(config), quotas)
    else:
        leader, events = None, None
    profiles = TopicProfiles(history, topics)
    model_table = fit_load_model(brokers)
    model = LoadModel.from_table(model_table, history.brokers)
    results, notes, cycles, hot = [], list(history.notes), {}, {}
    if why := legacy_reason(config):  # as-recorded then balances nothing: say why before the figures
        notes.append(f"the brokers run SimpleLoadManagerImpl, Pulsar's deprecated load manager ({why}), which is not "
                     "simulated: as-recorded moves nothing while they do")
    for k, run in enumerate(runs):
        tick = (lambda done, total, k=k, run=run: progress(k, run, done, total)) if progress else None
        r = simulate(history, model, config, run["strategy"], run["params"], run["seed"], policies, progress=tick,
                     profiles=profiles, ran=ran, residuals=True, leader=leader, events=events)
        results.append({"run_id": run["run_id"], "strategy": run["strategy"], "params": run["params"],
                        "seed": run["seed"], **r.summary})
        cycles[run["run_id"]] = [float(v) for v in r.timeseries["usage_std_unpinned"]]
        hot[run["run_id"]] = [float(v) for v in r.timeseries["overloaded_brokers"]]
        notes += [n for n in r.notes if n not in notes]
    fits = model_table.groupby("resource").agg(median_r2=("r2", "median"), pooled=("source", lambda s: int((s == "cluster").sum())))
    return {"cluster": cluster, "snapshots": len(history.times), "brokers": len(history.brokers),
            "bundles": len(history.bundles), "runs": results, "recommendation": decide(results, config, cycles, hot=hot),
            "load_model": fits.reset_index().to_dict("records"), "notes": notes}


def progress_bar(total_runs: int):
    """A progress callback for :func:`simulate_all` drawing one bar per run on stderr (about 20 updates a run)."""
    def show(k: int, run: dict, done: int, total: int) -> None:
        if done == total or done % max(1, total // 20) == 0:
            bar = "#" * int(30 * done / total)
            print(f"\r[{k + 1}/{total_runs}] {run['strategy']:<20} [{bar:<30}] {done}/{total} cycles", end="",
                  file=sys.stderr, flush=True)
            if done == total:
                print(file=sys.stderr)
    return show


def render_text(result: dict) -> str:
    lines = [f"{result['cluster']}: {result['snapshots']} snapshots, {result['brokers']} brokers, "
             f"{result['bundles']} bundles", "",
             f"{'run':<22}{'parameters':<50}{'overloaded min':>15}{'peak':>7}{'spread':>8}{'pinned min':>11}"
             f"{'unloads':>9}{'splits':>8}{'ping-pong':>10}{'reconnects':>11}{'settled':>9}"]
    for r in sorted(result["runs"], key=lambda r: (r["overloaded_broker_minutes"], spread(r), r["reconnections"])):
        params = ", ".join(f"{k}={v}" for k, v in sorted(r["params"].items())) or "as configured"
        lines.append(f"{r['strategy']:<22}{params[:49]:<50}{r['overloaded_broker_minutes']:>15}{r['peak_usage']:>7.0%}"
                     f"{spread(r):>8.1%}{r['pinned_broker_minutes']:>11}{r['unloads']:>9}{r['splits']:>8}"
                     f"{r['ping_pongs']:>10}{r['reconnections']:>11,}{r['events_converged']:>5}/{r['events']:<3}")
    lines += ["", "spread: mean standard deviation of the weighted max usage among brokers no one-topic bundle pins; "
              "pinned min: broker-minutes a one-topic bundle kept a broker overloaded (only a broker large enough for it helps); "
              "settled: recorded events after which the run came back to balance"]
    rec = result["recommendation"]
    verdict = (f"change to {rec['strategy']}" if rec.get("decision") == "change"
               else "keep the current configuration" if rec.get("current_imbalance") is not None else "none")
    lines += ["", f"decision: {verdict}", "why: " + rec["rationale"]]
    if rec["broker_conf"]:
        lines += ["", "broker.conf:", *("  " + x for x in rec["broker_conf"].splitlines())]
    if rec["commands"]:
        lines += ["", "or, on a running cluster:", *("  " + c for c in rec["commands"])]
    lines += ["", *("note: " + one_line(n) for n in result["notes"])]
    return "\n".join(lines)
