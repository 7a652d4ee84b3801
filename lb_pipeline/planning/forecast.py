"""Forecast of one usage series: when does its daily peak cross Pulsar's overload threshold?

The series forecast is the one the question is about: the daily peaks (each day's highest sample). Their trend is
Theil–Sen's (the median of the slopes between every two days, the level the median of what is left), so one day
pinned by a single hot bundle or a traffic incident does not tilt it; from two weeks of history, weekend days get
an offset of their own (the median of their residuals against the weekdays'). The 5 %/95 % band is Student's
t on the residuals' robust spread (1.4826 × their median absolute deviation, and at least half their root mean
square, so that rare large days are not explained away), widening with the distance from the days fitted; then
the band is checked against the series' own past: from every earlier day on, the same fit on the days before it
forecast the days after, and the band is widened until 90 % of those past outcomes fell inside it. A series whose
peaks jump (a broker whose bundles the balancer moves) gets the wide band its history earned, not the narrow one
of a smooth trend (``benchmarks/backtest_forecast.py`` scores the band on a 14-night history).

A broker's (or a failure domain's) peak also follows the bundles the balancer moves onto it or off it, which its own
history need not show: given its peers' ``Reach`` (how far above and below it the cluster's other brokers', or
domains', daily peaks stood on the same nights), the band reaches at least that far from its expected peak, since
the load one of them carried can land on this one (or leave it); such a band, and its expected peak, are clipped to
what usage can be (0 up to the highest peak seen, at least 100 %).

``days_until`` says when the expected peak, and the 5 %/95 % bands, first reach the threshold
(``loadBalancerBrokerOverloadedThresholdPercentage`` for brokers): the earliest date to plan for, the likely one
and the latest.

Fewer than ``MIN_DAYS`` days give no trend worth extrapolating: the result says "not enough history" rather than
a number.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MIN_DAYS = 3  # a trend needs at least three days (two points always fit a line exactly)
WEEKLY_MIN_DAYS = 14  # two of each weekday before a day-of-week effect is believed
HORIZON_DAYS = 365
CHART_DAYS = 30
PEER_NIGHTS = 7  # the nights whose daily peaks of the other brokers (domains) a broker's (domain's) band reaches


@dataclass(frozen=True)
class Forecast:
    status: str  # ok | above threshold | not enough history
    method: str
    history_days: int
    samples: int
    current_peak: float  # the last day's highest sample
    p95_daily_peak: float  # 95th percentile of the daily peaks over the window
    trend_per_day: float | None = None
    days_until: int | None = None
    days_until_earliest: int | None = None
    days_until_latest: int | None = None
    daily_peaks: list[float] = field(default_factory=list)  # observed, one per day of the window
    expected: list[float] = field(default_factory=list)  # forecast peak for the next CHART_DAYS days
    low: list[float] = field(default_factory=list)
    high: list[float] = field(default_factory=list)
    reached: bool = False  # the band was widened to the peers' reach


@dataclass(frozen=True)
class Reach:
    """Where load the balancer moves can take a series: how far below and above it its peers' daily peaks were on
    the same nights (the 5th and 95th percentiles of the differences, in points: ``below`` ≤ 0 ≤ ``above``), and the
    highest of those peaks (``top``)."""
    below: float
    above: float
    top: float

    @classmethod
    def of(cls, own, peers) -> Reach | None:
        """``own``: the series' daily peaks on some nights; ``peers``: the peers' on the same nights (a row per
        peer, NaN where a peer has none)."""
        own, peers = np.asarray(own, float), np.asarray(peers, float).reshape(-1, len(own))
        offsets = (peers - own).ravel()
        offsets = offsets[np.isfinite(offsets)]
        if not len(offsets):
            return None
        return cls(min(0.0, float(np.quantile(offsets, 0.05))), max(0.0, float(np.quantile(offsets, 0.95))),
                   float(np.nanmax(peers)))


# Student's t, one-sided 95 %, by degrees of freedom (beyond the table: the normal's 1.645 and a 1/dof term)
_T95 = {1: 6.314, 2: 2.920, 3: 2.353, 4: 2.132, 5: 2.015, 6: 1.943, 7: 1.895, 8: 1.860, 9: 1.833, 10: 1.812,
        12: 1.782, 15: 1.753, 20: 1.725, 30: 1.697}
COVERAGE = 0.90  # of the series' own past outcomes the band must have held (5 % to 95 %)


def t95(dof: int) -> float:
    dof = max(1, int(dof))
    known = [d for d in _T95 if d <= dof]
    return _T95[max(known)] if dof <= 30 else 1.645 + 1.6 / dof


@dataclass(frozen=True)
class _Fit:
    level: float
    slope: float
    weekend: float  # offset of Saturday and Sunday peaks
    spread: float  # robust residual spread
    n: int
    mean_x: float
    sxx: float

    def at(self, x: np.ndarray, we: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(expected peak, half-width of the 5-95 % band) on days ``x`` (``we``: weekend or not)."""
        expected = self.level + self.slope * x + self.weekend * we
        half = t95(self.n - 2 - (self.weekend != 0.0)) * self.spread * np.sqrt(
            1.0 + 1.0 / self.n + (x - self.mean_x) ** 2 / self.sxx)
        return expected, half


def _theil_sen(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    i, j = np.triu_indices(len(x), 1)
    slope = float(np.median((y[j] - y[i]) / (x[j] - x[i])))
    return float(np.median(y - slope * x)), slope


def _fit(x: np.ndarray, y: np.ndarray, we: np.ndarray, weekly: bool) -> _Fit:
    level, slope = _theil_sen(x, y)
    weekend = 0.0
    if weekly:
        res = y - level - slope * x
        weekend = float(np.median(res[we]) - np.median(res[~we]))
        level, slope = _theil_sen(x, y - weekend * we)
    res = y - level - slope * x - weekend * we
    rms = float(np.sqrt(res @ res / max(1, len(y) - 2)))
    spread = max(1.4826 * float(np.median(np.abs(res - np.median(res)))), 0.5 * rms, 1e-6)
    sxx = float(((x - x.mean()) ** 2).sum()) or 1.0
    return _Fit(level, slope, weekend, spread, len(y), float(x.mean()), sxx)


def _past_scores(x: np.ndarray, y: np.ndarray, we: np.ndarray) -> list[float]:
    """The series' own past forecasts: every day from the ``MIN_DAYS``-th on forecast from the days before it, its
    error in units of the band's half-width."""
    scores = []
    for o in range(MIN_DAYS, len(y)):
        expected, half = _fit(x[:o], y[:o], we[:o], False).at(x[o:], we[o:])
        scores += (np.abs(y[o:] - expected) / half).tolist()
    return scores


def _widening(scores: list[float]) -> float:
    """How much to widen the band so that it would have held ``COVERAGE`` of the past outcomes ``scores`` (a
    conformal quantile; never narrower than the t band)."""
    n = len(scores)
    if n < MIN_DAYS:
        return 1.0
    return max(1.0, float(np.quantile(scores, min(1.0, np.ceil((n + 1) * COVERAGE) / n))))


def _peaks(day, dow, value) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(days, their peaks, their weekdays, samples) of the finite samples."""
    day, dow, value = np.asarray(day, int), np.asarray(dow, int), np.asarray(value, float)
    ok = np.isfinite(value)
    day, dow, value = day[ok], dow[ok], value[ok]
    days = np.unique(day)
    peaks = np.array([value[day == d].max() for d in days])
    return days, peaks, np.array([dow[day == d][0] for d in days], dtype=int), len(value)


def forecast(day: np.ndarray, dow: np.ndarray, value: np.ndarray, threshold: float,
             horizon: int = HORIZON_DAYS, reach: Reach | None = None) -> Forecast:
    """``day``: whole days since the window's first (0, 1, …) of each sample; ``dow`` its weekday (0 = Monday);
    ``value`` the usage, in the threshold's unit; ``reach``: the peers' (see the module's docstring)."""
    days, peaks, weekdays, samples = _peaks(day, dow, value)
    if not samples:
        return Forecast("not enough history", "none", 0, 0, float("nan"), float("nan"))
    base = dict(history_days=len(days), samples=samples, current_peak=float(peaks[-1]),
                p95_daily_peak=float(np.percentile(peaks, 95)), daily_peaks=peaks.tolist())
    if len(days) < MIN_DAYS:
        return Forecast("not enough history", f"needs {MIN_DAYS} days", **base)
    x, we = days.astype(float), weekdays >= 5
    weekly = len(days) >= WEEKLY_MIN_DAYS and MIN_DAYS <= we.sum() <= len(days) - MIN_DAYS
    fit = _fit(x, peaks, we, weekly)
    last = int(days[-1])
    last_dow = int(weekdays[-1])
    ahead = np.arange(last + 1, last + horizon + 1)
    expected, half = fit.at(ahead.astype(float), (last_dow + ahead - last) % 7 >= 5)
    half = half * _widening(_past_scores(x, peaks, we))
    high, low = expected + half, expected - half
    reached = False
    if reach is not None:  # as far from its expected peak as the peers stood from it, carried along its trend
        widened_low, widened_high = np.minimum(low, expected + reach.below), np.maximum(high, expected + reach.above)
        shown = slice(0, CHART_DAYS)  # widened by more than a point where the forecast is read
        reached = bool((low[shown] - widened_low[shown] > 1.0).any() or (widened_high[shown] - high[shown] > 1.0).any())
        top = max(100.0, reach.top, float(peaks.max()))
        expected = np.clip(expected, 0.0, top)
        low, high = np.clip(widened_low, 0.0, top), np.clip(widened_high, 0.0, top)

    def first(series: np.ndarray) -> int | None:
        hit = np.flatnonzero(series >= threshold)
        return int(hit[0]) + 1 if len(hit) else None

    status = "above threshold" if peaks[-1] >= threshold else "ok"
    return Forecast(status, "trend of daily peaks + weekend" if weekly else "trend of daily peaks", **base,
                    trend_per_day=fit.slope, days_until=first(expected), days_until_earliest=first(high),
                    days_until_latest=first(low), expected=expected[:CHART_DAYS].tolist(),
                    low=low[:CHART_DAYS].tolist(), high=high[:CHART_DAYS].tolist(), reached=reached)
