"""The night's one decision: keep the configured strategy or change it, against the *current configuration*, with
its uncertainty and its stability over the last nights.

The reference is the run of the strategy the cluster runs, with its own values ("as configured"); "no balancing"
only tells whether that strategy helps at all. A change is proposed only when its run beats the reference

- without more overloaded broker-minutes and without a hotter peak (more than ``MATERIAL_GAIN`` above the
  reference's): what a planner reads first;
- and either with clearly fewer overloaded broker-minutes (``OVERLOAD_CUT`` of the reference's, ``OVERLOAD_MINUTES``
  at least; the fewest wins), or else by ``MATERIAL_GAIN`` (a point) or more of usage spread, the spread taken among
  the brokers no one-topic bundle pins (``metrics``: where such a bundle sits decides that broker's usage, and it
  would decide the comparison alone; which broker it lands on shows in the overloaded minutes);
- beyond the night's uncertainty: the cycle-by-cycle difference of the two runs (overloaded brokers, or spread),
  resampled in blocks of consecutive cycles (neighbouring cycles are not independent), keeps its 90 % interval
  above zero;
- on most of the recent nights the lake holds (this one included): a night's own verdict is stored
  (``gold/recommendations.verdict``), and a change that one night favours and the others do not is not proposed.

A configured strategy that spreads load worse than leaving ownership alone, beyond the same uncertainty, is a
finding of its own (``worse_than_none``), unless it clearly relieves overload (fewer overloaded broker-minutes or
a lower peak than no balancing, by the margins above).
"""

from __future__ import annotations

import numpy as np

from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.load_manager import configured_strategy
from lb_pipeline.simulation.balancers import STRATEGIES
from lb_pipeline.simulation.sweep import MATERIAL_GAIN, describe, recommend

NIGHTS = 7  # this night and the six before it
OVERLOAD_CUT = 0.25  # a change on overloaded broker-minutes: a quarter of the configured strategy's, or more
OVERLOAD_MINUTES = 10  # and ten broker-minutes at least
RESAMPLES = 400
LEVEL = 0.90


def gain_interval(reference: list[float], other: list[float], resamples: int = RESAMPLES,
                  level: float = LEVEL) -> tuple[float, float, float] | None:
    """The mean of ``reference − other`` over the cycles both have, and its ``level`` interval from a moving-block
    bootstrap (blocks of √n consecutive cycles, a fixed seed: the same runs give the same interval). None when fewer
    than four cycles are shared."""
    n = min(len(reference), len(other))
    if n < 4:
        return None
    d = np.asarray(reference[:n], float) - np.asarray(other[:n], float)
    d = d[np.isfinite(d)]
    n = len(d)
    if n < 4:
        return None
    block = max(1, int(round(np.sqrt(n))))
    starts = np.arange(n - block + 1)
    per = -(-n // block)
    rng = np.random.default_rng(0)
    picks = rng.choice(starts, size=(resamples, per))
    idx = (picks[:, :, None] + np.arange(block)[None, None, :]).reshape(resamples, -1)[:, :n]
    means = d[idx].mean(axis=1)
    tail = (1 - level) / 2
    return float(d.mean()), float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))


def spread(r: dict) -> float | None:
    """A run's mean spread among unpinned brokers (a table written before that figure: among all brokers)."""
    v = r.get("usage_std_unpinned_mean")
    return r.get("usage_std_mean") if v is None or v != v else v


def _key(r: dict) -> tuple:
    return r["strategy"], tuple(sorted((k, str(v)) for k, v in (r.get("params") or {}).items()))


def _pooled(runs: list[dict], cycles: dict[str, list[float]], hot: dict[str, list[float]]) -> dict[tuple, dict]:
    """Runs of one strategy and parameter set over several seeds as one: their figures averaged, their cycles
    averaged cycle by cycle."""
    out: dict[tuple, dict] = {}
    for r in runs:
        out.setdefault(_key(r), []).append(r)
    pooled = {}
    for key, group in out.items():
        series = [cycles[r["run_id"]] for r in group if r.get("run_id") in cycles]
        n = min((len(s) for s in series), default=0)
        pooled[key] = {**group[0], "imbalance": float(np.mean([spread(r) for r in group])),
                       "overloaded": float(np.mean([r.get("overloaded_broker_minutes") or 0 for r in group])),
                       "peak": float(np.mean([r.get("peak_usage") or 0.0 for r in group])),
                       "churn": int(np.mean([r["reconnections"] for r in group])),
                       "series": list(np.mean([s[:n] for s in series], axis=0)) if series and n else [],
                       "hot": _mean_series([_minutes(r, hot[r["run_id"]]) for r in group if r.get("run_id") in hot])}
    return pooled


def _minutes(run: dict, counts: list[float]) -> list[float]:
    """A run's overloaded brokers per cycle as broker-minutes per cycle (its cadence: they sum to its total)."""
    total = float(sum(counts))
    scale = (run.get("overloaded_broker_minutes") or 0) / total if total else 0.0
    return [c * scale for c in counts]


def _mean_series(series: list[list[float]]) -> list[float]:
    n = min((len(s) for s in series), default=0)
    return list(np.mean([s[:n] for s in series], axis=0)) if series and n else []


def _relieves(run: dict, none_run: dict) -> bool:
    """``run`` clearly does better than leaving ownership alone on what a planner reads first: a clear cut in
    overloaded broker-minutes (as a change is judged) or a peak a point lower. A wider spread among the unpinned
    brokers then does not make it "worse than no balancing": on the demo night where ThresholdShedder cut 1,261
    overloaded broker-minutes to 6 and spread the rest 7 points wider, the report had said so, against its own table."""
    cut = max(OVERLOAD_MINUTES, OVERLOAD_CUT * none_run["overloaded"])
    return none_run["overloaded"] - run["overloaded"] >= cut or none_run["peak"] - run["peak"] >= MATERIAL_GAIN


def decide(runs: list[dict], config: PulsarConfig, cycles: dict[str, list[float]] | None = None,
           history: list[dict] = (), hot: dict[str, list[float]] | None = None) -> dict:
    """``runs``: run summaries (run_id, strategy, params, usage_std_unpinned_mean or usage_std_mean, peak_usage,
    overloaded_broker_minutes, reconnections, notes); ``cycles``: per run_id the spread (usage_std_unpinned, or
    usage_std) of every cycle, in time order; ``hot``: per run_id its overloaded brokers of every cycle; ``history``: the earlier
    nights' rows of ``gold/recommendations`` (snapshot_date, verdict), newest first. Returns the recommendation
    (``sweep.recommend``'s keys; ``strategy`` None unless the decision is to change) and what it rests on."""
    cycles, hot = cycles or {}, hot or {}
    done = [r for r in runs if spread(r) is not None and spread(r) == spread(r)]
    base = {"decision": "keep", "verdict": None, "current_strategy": configured_strategy(config),
            "current_imbalance": None, "baseline_imbalance": None, "candidate_strategy": None,
            "candidate_imbalance": None, "gain": None, "gain_low": None, "gain_high": None, "nights_agreeing": 0,
            "nights_seen": 1 + len(history[:NIGHTS - 1]), "worse_than_none": False, "worse_by": None,
            "worse_low": None, "basis": None, "current_overloaded": None, "candidate_overloaded": None}
    if not done:
        why = (runs[0].get("notes") if runs else None) or "the day was not simulated"
        return {**base, "strategy": None, "params": {}, "broker_conf": "", "commands": [],
                "rationale": f"no recommendation: {why}"}
    pooled = _pooled(done, cycles, hot)
    current_name = base["current_strategy"]
    reference = pooled.get((current_name, ())) if current_name in STRATEGIES else None
    none_run = pooled.get(("no-balancing", ()))
    if reference is None:  # a legacy or plugin load manager is not simulated: compare with leaving ownership alone
        reference = none_run
        label = "no balancing (the configured " + current_name + " is not simulated)"
    else:
        label = f"the configured {current_name}"
    if reference is None:
        return {**base, "strategy": None, "params": {}, "broker_conf": "", "commands": [],
                "rationale": "no recommendation: neither the configured strategy nor no balancing was simulated"}
    base.update(current_imbalance=reference["imbalance"],
                baseline_imbalance=none_run["imbalance"] if none_run else None)
    if none_run is not None and reference is not none_run:
        worse = gain_interval(reference["series"], none_run["series"])  # > 0: no balancing spreads less
        by = reference["imbalance"] - none_run["imbalance"]
        if by >= MATERIAL_GAIN and worse is not None and worse[1] > 0 and not _relieves(reference, none_run):
            base.update(worse_than_none=True, worse_by=by, worse_low=worse[1])
    candidates = [{"strategy": r["strategy"], "params": r["params"], "imbalance": r["imbalance"], "churn": r["churn"],
                   "series": r["series"], "hot": r["hot"], "overloaded": r["overloaded"], "peak": r["peak"]}
                  for r in pooled.values() if r["strategy"] in STRATEGIES and r is not reference
                  and r["overloaded"] <= reference["overloaded"] and r["peak"] <= reference["peak"] + MATERIAL_GAIN]
    base.update(current_overloaded=reference["overloaded"])
    # first what a planner reads first: a clear cut in overloaded broker-minutes, beyond the night's uncertainty
    cut = max(OVERLOAD_MINUTES, OVERLOAD_CUT * reference["overloaded"])
    fewer = sorted((c for c in candidates if reference["overloaded"] - c["overloaded"] >= cut),
                   key=lambda c: (c["overloaded"], c["imbalance"], c["churn"], c["strategy"]))
    held = ""  # a cut in overloaded minutes the night's uncertainty does not bear out
    for chosen in fewer[:1]:
        interval = gain_interval(reference["hot"], chosen["hot"])
        n = min(len(reference["hot"]), len(chosen["hot"]))
        if interval is not None and interval[1] <= 0:
            held = (f"; {chosen['strategy']} had {reference['overloaded'] - chosen['overloaded']:,.0f} fewer "
                    f"overloaded broker-minutes, within the night's uncertainty (90 % interval {interval[1] * n:,.0f} "
                    f"to {interval[2] * n:,.0f})")
        if interval is not None and interval[1] > 0:
            rec = recommend([{**chosen, "imbalance": 0.0}], 1.0, config, reference=label)  # its settings, commands
            sure = (f"{reference['overloaded'] - chosen['overloaded']:,.0f} overloaded broker-minutes (90 % interval "
                    f"{interval[1] * n:,.0f} to {interval[2] * n:,.0f})")
            base.update(basis="overloaded broker-minutes", candidate_overloaded=chosen["overloaded"],
                        gain=reference["overloaded"] - chosen["overloaded"], gain_low=interval[1] * n,
                        gain_high=interval[2] * n)
            return _conclude(base, chosen, {**rec, "rationale": (
                f"{chosen['strategy']} with {describe(chosen['params'])}: overloaded broker-minutes "
                f"{chosen['overloaded']:,.0f} where {label} has {reference['overloaded']:,.0f}, load spread "
                f"{chosen['imbalance'] * 100:.1f} against {reference['imbalance'] * 100:.1f} %, at "
                f"{chosen['churn']:,} client reconnections")}, label, sure, history)
    rec = recommend(candidates, reference["imbalance"], config, reference=label)
    if rec["strategy"] is None:
        return {**base, **rec, "rationale": _keep(rec["rationale"].removesuffix("; keep the current configuration")
                                                  + held, base)}
    chosen = next(c for c in candidates if _key(c) == _key(rec))
    interval = gain_interval(reference["series"], chosen["series"])
    gain = reference["imbalance"] - chosen["imbalance"]
    base.update(basis="spread", candidate_overloaded=chosen["overloaded"], gain=gain,
                gain_low=interval[1] if interval else None, gain_high=interval[2] if interval else None)
    if interval is None or interval[1] <= 0:
        base.update(candidate_strategy=chosen["strategy"], candidate_imbalance=chosen["imbalance"])
    sure = f"{gain * 100:.1f} points of spread" + (
        f" (90 % interval {interval[1] * 100:.1f} to {interval[2] * 100:.1f})" if interval else
        " (too few cycles to say how sure)")
    if interval is None or interval[1] <= 0:
        return {**base, "strategy": None, "params": {}, "broker_conf": "", "commands": [], "rationale": _keep(
            f"{chosen['strategy']} beat {label} by {sure}: within the night's uncertainty{held}", base)}
    return _conclude(base, chosen, rec, label, sure, history)


def _conclude(base: dict, chosen: dict, rec: dict, label: str, sure: str, history) -> dict:
    """A candidate that beat the reference beyond the night's uncertainty: a change when most recent nights agree."""
    verdict = chosen["strategy"]
    earlier = [h.get("verdict") for h in history[:NIGHTS - 1]]
    agreeing = 1 + sum(1 for v in earlier if v == verdict)
    base.update(candidate_strategy=verdict, candidate_imbalance=chosen["imbalance"], verdict=verdict,
                nights_agreeing=agreeing)
    if agreeing * 2 <= base["nights_seen"]:
        return {**base, "strategy": None, "params": {}, "broker_conf": "", "commands": [], "rationale": _keep(
            f"{verdict} beat {label} by {sure}, but on {agreeing} of the last {base['nights_seen']} "
            f"nights only ({_others(earlier, verdict, label)}): not yet a stable answer", base)}
    return {**base, **rec, "decision": "change", "rationale": (
        f"{rec['rationale']}; it beat {label} by {sure} on {agreeing} of the last "
        f"{base['nights_seen']} night{'s' if base['nights_seen'] != 1 else ''}")}


def _others(earlier: list, verdict: str, label: str) -> str:
    """What the other recent nights favoured, most often first: why tonight's verdict is not yet the answer."""
    named = ["no change" if v is None else v if isinstance(v, str) and v in STRATEGIES else "an unreadable verdict"
             for v in earlier]  # the lake's rows: only a strategy's name is repeated
    counts: dict[str, int] = {}
    for v in named:
        if v != verdict:
            counts[v] = counts.get(v, 0) + 1
    said = ", ".join(f"{v} on {n}" for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    text = f"the other nights favoured {said}" if said else "no other night"
    if earlier and all(v in STRATEGIES for v in named):  # each night beat the configured strategy, with another one
        text += f"; every night something beat {label}"
    return text


def _keep(why: str, base: dict) -> str:
    """Why the configuration stays (the decision says "keep" itself)."""
    out = why
    if base["worse_than_none"]:
        out += (f". The configured {base['current_strategy']} spread load {base['worse_by'] * 100:.1f} points worse "
                "than leaving ownership alone")
    return out
