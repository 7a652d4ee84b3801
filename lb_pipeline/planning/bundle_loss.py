"""Headroom when brokers are lost, bundle by bundle, on demand rather than on capped usage.

An even spread of the lost load over the survivors (``headroom.survive``) is a fluid model: it says the survivors
sit at 82 % while one topic alone needs more than a broker, and it takes a pegged broker's report (100 %) for its
demand. Here the load moves as Pulsar moves it, in whole pieces:

* **demand**: each broker's load is the load model's on the traffic it serves plus what the model missed there (the
  report minus the model: the host's own noise stays with the host), except on a broker whose report sat at its limit:
  its demand was above what it could serve, so the model's figure on its traffic stands, flagged as an estimate
  (``estimated``). The same load model gives each bundle's cost (``gold/load_model``, the cluster's median
  coefficients: the cost of a message does not depend on which broker serves it, its capacity does);
* **pieces**: a bundle can be split down to its topics (``loadBalancerAutoBundleSplitEnabled`` and the split
  thresholds), never further: its hottest topic is one indivisible piece, the rest spreads in smaller ones;
* **after balancing**: pieces placed largest first, each on the broker whose usage it raises least (what the
  shedders and splits converge towards, at best; pieces below ``FLUID_SHARE`` of a typical broker are spread as
  a fluid), and the figure is the hottest survivor's usage, not the mean;
* **brokers to add**: the fewest brokers of the cluster's typical size (median limit, idle cost) that keep the
  hottest broker under ``loadBalancerBrokerOverloadedThresholdPercentage``; none is enough when one piece alone
  (a topic) needs more than that of a typical broker and of every survivor (``too_big``): partition the topic, or
  a larger broker.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

METHOD = "bundles on demand"  # gold/capacity_forecast.method of the loss rows sized here
TOO_BIG = "no number of brokers of the cluster's size is enough"  # how a loss row's note begins to say why
FLUID_SHARE = 0.02  # pieces smaller than this share of a typical broker's limit spread as a fluid
MAX_PIECES = 8  # a bundle's topics other than its hottest, in at most this many pieces
MORE = 256  # brokers to add searched beyond the even spread's answer


@dataclass(frozen=True)
class Cluster:
    """One resource of one snapshot: per broker (``limit``, reported ``usage``, the model's ``idle`` cost) and per
    bundle (``owner`` index, ``cost`` on any broker, ``hottest`` share of it in one topic, ``topics``)."""

    brokers: list[str]
    limit: np.ndarray
    usage: np.ndarray
    idle: np.ndarray
    modelled: np.ndarray  # the model's usage of each broker on the traffic it served (idle + its bundles' costs)
    bundles: list[str]
    owner: np.ndarray
    cost: np.ndarray
    hottest: np.ndarray
    topics: np.ndarray
    saturated: float = 0.99


@dataclass(frozen=True)
class Survival:
    usage_after: float  # the hottest survivor's usage after balancing, percent of its limit
    even_after: float  # Σ demand / Σ survivors' capacity, percent
    brokers_to_add: int | None
    too_big: list[tuple[str, float]] = field(default_factory=list)  # (bundle, its hottest topic in % of a typical broker)
    estimated: list[str] = field(default_factory=list)  # brokers whose demand is the model's (reported at the limit)
    why: str | None = None  # why no number of brokers is enough, when none is


def base_load(c: Cluster) -> tuple[np.ndarray, list[str]]:
    """Per broker, what stays with it when its bundles move: the model's idle cost plus what the model missed there
    (nothing on a broker reported at its limit, where the report is no measure of demand)."""
    at_limit = (c.limit > 0) & (c.usage >= c.saturated * c.limit)
    missed = np.where(at_limit, 0.0, c.usage - c.modelled)
    return np.maximum(c.idle + missed, 0.0), [b for b, s in zip(c.brokers, at_limit) if s]


def pieces(c: Cluster, costs: np.ndarray | None = None) -> np.ndarray:
    """Every bundle's load (``costs``, else the cluster's) in the pieces splits could cut it into: its hottest
    topic, then the rest."""
    out = []
    for cost, share, topics in zip(c.cost if costs is None else costs, c.hottest, c.topics):
        if cost <= 0:
            continue
        if topics <= 1 or not share or not 0 < share < 1:
            out.append(cost)
            continue
        out.append(cost * share)
        k = int(min(topics - 1, MAX_PIECES))
        out += [cost * (1 - share) / k] * k
    return np.sort(np.asarray(out, float))[::-1]


def pack(base: np.ndarray, limit: np.ndarray, load: np.ndarray, fluid_below: float) -> np.ndarray:
    """Usage ratio of each broker after placing ``load`` (pieces, largest first) on top of ``base``: each piece on
    the broker it leaves least used, the pieces below ``fluid_below`` water-filled."""
    level = base.astype(float).copy()
    big = load[load >= fluid_below]
    for p in big:
        k = int(np.argmin((level + p) / limit))
        level[k] += p
    rest = float(load[load < fluid_below].sum())
    if rest > 0:  # raise the least used brokers to one common ratio until the rest is placed
        ratio = level / limit
        order = np.argsort(ratio)
        r, cap = ratio[order], limit[order]
        filled, left = 0.0, rest
        for i in range(len(r)):
            filled += cap[i]
            nxt = r[i + 1] if i + 1 < len(r) else math.inf
            need = (nxt - r[i]) * filled
            if need >= left:
                top = r[i] + left / filled
                break
            left -= need
        level = np.maximum(level, top * limit)
    return level / limit


def survive(c: Cluster, lost: np.ndarray, threshold: float, growth: float = 1.0) -> Survival:
    """The loss of the brokers in ``lost`` (a mask): the survivors' hottest usage after balancing, the even
    spread's, and the brokers of the cluster's typical size to add (None when no number is enough)."""
    base, estimated = base_load(c)
    cost = c.cost * growth
    keep = ~lost & (c.limit > 0)
    typical_limit = float(np.median(c.limit[c.limit > 0])) if (c.limit > 0).any() else 0.0
    typical_idle = float(np.median(c.idle[c.limit > 0])) if (c.limit > 0).any() else 0.0
    if not keep.any() or typical_limit <= 0:
        return Survival(math.inf, math.inf, None, [], estimated)
    demand = float(base[keep].sum() + cost.sum())  # the lost brokers' own idle cost goes with them
    even = 100.0 * demand / float(c.limit[keep].sum())
    load = pieces(c, cost)
    fluid = FLUID_SHARE * typical_limit
    after = 100.0 * float(pack(base[keep], c.limit[keep], load, fluid).max())
    target = threshold / 100.0
    # a topic fits nowhere when it is above the threshold on an empty broker of the typical size and on every
    # survivor (a larger survivor may carry what a typical broker cannot)
    room = max(target * typical_limit - typical_idle, float((target * c.limit[keep] - c.idle[keep]).max()))
    hottest = cost * np.where((c.topics > 1) & (c.hottest > 0) & (c.hottest < 1), c.hottest, 1.0)
    too_big = sorted(((b, 100.0 * h / typical_limit) for b, h in zip(c.bundles, hottest) if h > room),
                     key=lambda x: -x[1])
    if after <= threshold:
        return Survival(after, even, 0, too_big, estimated)
    if threshold <= 0:
        return Survival(after, even, None, too_big, estimated,
                        f"a threshold of {threshold:g} % calls every broker with load overloaded")
    if too_big:
        b, share = too_big[0]
        return Survival(after, even, None, too_big, estimated,
                        f"the hottest topic of {b} alone needs {share:.0f} % of one (partition the topic, or a larger "
                        "broker)" + (f", and {len(too_big) - 1} more bundle(s) alike" if len(too_big) > 1 else ""))
    own = [b for b, x, lim in zip(np.asarray(c.brokers)[keep], base[keep], c.limit[keep]) if x > target * lim]
    if own or typical_idle >= target * typical_limit:  # load no bundle move takes away, or new brokers born hot
        return Survival(after, even, None, too_big, estimated,
                        f"{', '.join(own[:3])} carr{'ies' if len(own) == 1 else 'y'} more than the threshold outside "
                        "its bundles (its report less what its bundles cost): no move relieves it" if own else
                        "a broker of the cluster's size is above the threshold idle")

    def fits(k: int) -> bool:
        limits = np.concatenate([c.limit[keep], np.full(k, typical_limit)])
        bases = np.concatenate([base[keep], np.full(k, typical_idle)])
        return 100.0 * float(pack(bases, limits, load, fluid).max()) <= threshold

    # from the even spread's answer up: doubling, then halving the gap (more brokers never make the packing worse)
    start = low = max(1, math.ceil((demand / target - float(c.limit[keep].sum())) / typical_limit))
    high, step = low, 1
    while not fits(high):
        if high - start > MORE:
            return Survival(after, even, None, too_big, estimated, f"more than {MORE} brokers of the cluster's size")
        low, high, step = high + 1, high + step, step * 2
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if fits(mid) else (mid + 1, high)
    return Survival(after, even, high, too_big, estimated)
