"""A wave of moves checked before the report proposes it: its predicted effect per broker, and why it is withheld.

The effect is predicted from the last snapshot: each moved bundle's message rate leaves its owner and joins its
destination; a broker's usage follows its message rate in proportion (its own usage per msg/s; an idle broker takes
the cluster's). A wave is not proposed when it raises the hottest broker's predicted usage, widens the spread of
message rates, or puts two or more bundles no split can help (one topic each) on one broker: those need isolation, a
bigger broker or a partitioned topic, not a move.
"""

from __future__ import annotations

import math
import statistics

TOLERANCE = 0.005  # half a point of usage: less is the prediction's own noise
# A moved bundle's first report on its new owner carries more than its rate (the clients' messages held during the
# move): up to 2.55 times on one recorded real cluster, 6.3 on another, where the leader split 3 of 17 hot bundles
# at that very report (tests/fixtures/real-probe-burst, docs/validation.md). Within this factor of
# loadBalancerNamespaceBundleMaxMsgRate a move may end in a split on arrival.
ARRIVAL_BURST = 2.5


def spread(rates: dict[str, float]) -> float:
    """The standard deviation of the brokers' message rates (0 with one broker)."""
    return statistics.pstdev(rates.values()) if len(rates) > 1 else 0.0


def rates_after(moves: list[dict], rates: dict[str, float], bundle_rates: dict[str, float]) -> dict[str, float]:
    """Each broker's message rate once ``moves`` are made: a moved bundle's rate leaves its source and joins its
    destination (a move placed at lookup, or between brokers not in ``rates``, changes nothing here)."""
    after = dict(rates)
    for m in moves:
        if m["destination"] and m["source"] in after and m["destination"] in after:
            rate = bundle_rates.get(m["bundle"], 0.0)
            after[m["source"]] -= rate
            after[m["destination"]] += rate
    return after


def _known(values: dict) -> dict[str, float]:
    return {k: float(v) for k, v in values.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


def _instead(bundles: list[str]) -> str:
    """What would help where a move only carries a single-topic bundle's heat to another broker."""
    if not bundles:
        return ""
    which = ", ".join(sorted(bundles))
    return (f": {which} {'is one topic' if len(bundles) == 1 else 'are one topic each'}, which no move or split "
            "spreads; isolate it on a broker large enough for it, or partition its topic (the finding "
            "\"hot bundle no split can help\" says how)")


def check_wave(moves: list[dict], rates: dict[str, float], usage: dict[str, float], topics: dict[str, int],
               bundle_rates: dict[str, float], split_limit: float | None = None) -> dict:
    """``moves``: dicts with bundle, source, destination (None: placed at lookup); ``rates``/``usage``: per broker at
    the last snapshot (msg/s in + out; weighted max usage 0-1); ``topics``/``bundle_rates``: per moved bundle (its
    topic count: 1 also where one topic carries nearly all of it, as no split spreads it either). A
    figure that is missing or not finite (a broker without a usable report) counts as unknown: the broker is left
    out of the prediction, and a bundle of unknown rate moves nothing. ``split_limit``: the leader's
    ``loadBalancerNamespaceBundleMaxMsgRate`` (the modular load manager, which splits on a single report): the moved
    bundles of more than one topic within ``ARRIVAL_BURST`` of it are listed in ``may_split``."""
    rates, usage, bundle_rates = _known(rates), _known(usage), _known(bundle_rates)
    after = rates_after(moves, rates, bundle_rates)
    per_rate = [usage[b] / rates[b] for b in rates if rates[b] > 0 and b in usage]
    pooled = statistics.median(per_rate) if per_rate else 0.0
    predicted = {b: (usage.get(b, 0.0) * after[b] / rates[b]) if rates[b] > 0 else usage.get(b, 0.0) + pooled * after[b]
                 for b in after}
    peak_before = max(usage.values(), default=0.0)
    peak_after = max(predicted.values(), default=0.0)
    stacked: dict[str, list[str]] = {}
    for m in moves:
        if m["destination"] and topics.get(m["bundle"]) == 1:
            stacked.setdefault(m["destination"], []).append(m["bundle"])
    stacked = {b: sorted(v) for b, v in stacked.items() if len(v) > 1}
    why = []
    if peak_after > peak_before + TOLERANCE:
        hottest = max(predicted, key=predicted.get)
        why.append(f"it would raise the hottest broker's usage from {peak_before:.0%} to {peak_after:.0%} ({hottest})"
                   + _instead([m["bundle"] for m in moves if m["destination"] == hottest and topics.get(m["bundle"]) == 1]))
    if spread(after) > spread(rates) * (1 + TOLERANCE):
        why.append(f"it would widen the spread of message rates from {spread(rates):,.0f} to {spread(after):,.0f} msg/s")
    for broker, bundles in sorted(stacked.items()):
        why.append(f"it would put {len(bundles)} single-topic bundles no split can help on {broker} "
                   f"({', '.join(bundles)}): isolate them on separate or bigger brokers, or partition their topics")
    # the brokers the wave touches, and the hottest after it: a table of every broker would run to a hundred rows
    shown = {b for m in moves for b in (m["source"], m["destination"]) if b in after}
    if predicted:
        shown.add(max(predicted, key=predicted.get))
    brokers = [{"broker": b, "rate_before": rates[b], "rate_after": after[b], "usage_before": usage.get(b),
                "usage_after": predicted[b]} for b in sorted(shown)]
    may_split = sorted({m["bundle"] for m in moves if split_limit and split_limit > 0
                        and bundle_rates.get(m["bundle"], 0.0) * ARRIVAL_BURST >= split_limit
                        and topics.get(m["bundle"], 2) > 1})
    return {"proposed": bool(moves) and not why, "why_not": why, "brokers": brokers, "may_split": may_split,
            "split_limit": split_limit,
            "spread_before": spread(rates), "spread_after": spread(after),
            "peak_before": peak_before, "peak_after": peak_after}
