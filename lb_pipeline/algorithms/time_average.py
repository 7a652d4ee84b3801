"""``TimeAverageMessageData.update`` (the modular leader's per-bundle averages), in closed form.

Pulsar's rule per sample ``x``: ``n = min(n + 1, N); avg = ((n - 1) * avg + x) / n`` with N = 10 (short term) or
1000 (long term). Until the window is full it is an exact running mean; after that an exponential average with
weight 1/N. Between two snapshots the leader samples every bundle once per broker report (about once a minute);
for ``k`` samples of the same value the rule collapses to the closed form below. Unseen bundles start from
Pulsar's default seed: 50 msg/s and 50 000 B/s each way, ``numSamples = 0`` (the first sample replaces it).
"""

from __future__ import annotations

import math

SHORT_SAMPLES, LONG_SAMPLES = 10, 1000
DEFAULT_SEED = {"msg_rate_in": 50.0, "msg_rate_out": 50.0, "msg_throughput_in": 50000.0, "msg_throughput_out": 50000.0}
FIELDS = tuple(DEFAULT_SEED)


def update(n: int, avg: float, x: float, k: int, window: int) -> tuple[int, float]:
    """Apply the update rule ``k`` times with the same sample ``x``; returns the new (numSamples, average)."""
    if k <= 0:
        return n, avg
    m = min(k, max(0, window - n))  # running-mean phase until the window fills
    if m:
        avg = (n * avg + m * x) / (n + m)
        n += m
    rest = k - m
    if rest:
        avg = x + (avg - x) * (1 - 1 / window) ** rest
    return n, avg


def update_many(n, avg, x, k, window: int):
    """``update`` over numpy arrays (one element per bundle), same arithmetic in the same order. The leader's
    bundles mostly share a phase (every one still filling the long window, or every one past the short one, one
    sample each): then no ``where`` is needed, and each step of the rule is one pass (a third of the time a
    cycle of the simulation had spent here)."""
    import numpy as np

    m = np.minimum(k, np.maximum(0, window - n))
    rest = k - m
    if m.all():  # running-mean phase everywhere
        avg = (n * avg + m * x) / (n + m)
    elif m.any():
        avg = np.where(m > 0, (n * avg + m * x) / np.maximum(n + m, 1), avg)
    n = n + m
    top = int(rest.max(initial=0))
    if top:
        # Python's float power per exponent (numpy's vectorised pow can differ in the last bit)
        factor = 1 - 1 / window
        if rest.min() == top:  # the same number of samples everywhere: one factor
            avg = x + (avg - x) * factor ** top
        else:
            # one power per exponent up to the first that is 0.0 exactly (below 2^-1075): a cadence of a
            # billion samples (a hostile loadBalancerSheddingIntervalMinutes) costs no more than a thousand
            zero = math.ceil(1100 * math.log(2) / -math.log(factor)) if 0 < factor < 1 else 1
            decay = np.array([factor ** r for r in range(min(top, zero) + 1)])
            avg = np.where(rest > 0, x + (avg - x) * decay[np.minimum(rest, zero)], avg)
    return n, avg


def update_loop(n: int, avg: float, x: float, k: int, window: int) -> tuple[int, float]:
    """The rule exactly as Pulsar applies it, one sample at a time (reference for tests)."""
    for _ in range(k):
        n = min(n + 1, window)
        avg = ((n - 1) * avg + x) / n
    return n, avg
