"""``validate-simulation``'s text: one run's scores against the targets, and the strategies' ranking across runs
(``real_validation`` computes both)."""

from __future__ import annotations

from datetime import datetime, timezone

from lb_pipeline.model.names import one_line
from lb_pipeline.simulation.real_validation import TARGETS


def render_text(result: dict) -> str:
    def fmt(x, pct=True):
        return "–" if x is None else (f"{x:.0%}" if pct else f"{x:.1f}")

    def n(x):
        return "–" if x is None else str(x)

    met = {k: ("met" if v else "missed" if v is not None else "not measurable") for k, v in result["met"].items()}
    return "\n".join([
        f"{result['cluster']} {result['day']}: {result['strategy']} simulated closed-loop over {result['snapshots']} "
        f"snapshots, {result['brokers']} brokers",
        f"unloads: {n(result['logged_unloads'])} logged, {result['simulated_unloads']} simulated, "
        f"{n(result['matched_unloads'])} matched ({n(result['destinations_agree'])} to the logged broker): precision "
        f"{fmt(result['precision'])} ({met['precision']}, target ≥ {TARGETS['precision']:.0%}), recall "
        f"{fmt(result['recall'])} ({met['recall']}, target ≥ {TARGETS['recall']:.0%})",
        *([f"the loop made the record's unloads until {_utc(result['first_difference_ms'])} UTC, where the first unload "
           "made on one side only came"] if result.get("first_difference_ms") is not None else []),
        *([f"warm-up: {result['warming_up']} of the simulated unloads ({n(result['warming_up_matched'])} matched) "
           f"came in the first {result['warm_up_cycles']} cycles, before {result['strategy']}'s state, started at the "
           "first snapshot, could have caught up with the leader's (started at its election), from brokers whose state "
           "the leader had not logged: estimates; "
           + (f"the rest (after that window, or from the leader's logged state): precision "
              f"{fmt(result['settled_precision'])}, recall {fmt(result['settled_recall'])}"
              if result["settled_precision"] is not None or result["settled_recall"] is not None
              else f"the record's {result['cycles']} cycles all fall inside that window")]
          if result.get("warming_up") else []),
        *([f"placed on lookup: {result['orphans_lost']} bundle(s) of brokers that stopped, "
           f"{result['orphans_reowned']} owned again in the record by the next snapshot (on a client's lookup), "
           f"{result['orphans_agree']} of them placed by the loop on the recorded broker"
           + (f"; per broker, the loop's count {result['orphans_count_off']} bundle(s) off the record's, its msg rate "
              f"{result['orphans_traffic_off']:.0%} off" if result.get("orphans_traffic_off") is not None else "")]
          if result.get("orphans_lost") else []),
        *([f"placement: the placement path run on the leader's view at each logged unload (the reports as last "
           f"written) picks the logged broker for {result['placements_same']} of {result['placements_logged']}"
           + (f" with the {result['lookup_assignments']} lookups' assignments logged between them, "
              f"{result['placements_same_without_lookups']} without" if result["lookup_assignments"] else "")]
          if result.get("placements_logged") else []),
        f"splits: {n(result['logged_splits'])} logged, {result['simulated_splits']} simulated, "
        f"{n(result['matched_splits'])} of the same bundle",
        f"per-broker usage: mean absolute error {fmt(result['usage_mae_points'], False)} points "
        f"(max {fmt(result['usage_max_error_points'], False)}; {met['usage_mae_points']}, target ≤ "
        f"{TARGETS['usage_mae_points']:g}); the load model alone, on the recorded ownership: "
        f"{fmt(result['model_mae_points'], False)} points",
        f"spread: brokers {fmt(result['recorded_imbalance_points'], False)} points apart on average as recorded "
        f"(peak {fmt(result['recorded_peak_points'], False)}), {fmt(result['simulated_imbalance_points'], False)} "
        f"simulated (peak {fmt(result['simulated_peak_points'], False)})",
        *(f"note: {one_line(n)}" for n in result["notes"])])


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def render_ranking(ranking: dict) -> str:
    verdict = {True: "the same order", False: "a different order", None: "one run: nothing to rank"}[ranking["same"]]
    return (f"ranking by mean imbalance, best first: recorded {' < '.join(ranking['recorded'])}; simulated "
            f"{' < '.join(ranking['simulated'])}: {verdict}")
