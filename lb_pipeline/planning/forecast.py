"""Forecast of one usage series: when does its daily peak cross Pulsar's overload threshold?

The model is ordinary least squares on every sample of the look-back window:
``usage = level + trend·day + hour-of-day effect (+ day-of-week effect)``. The daily cycle is always there in
broker load; the weekly one only shows once two weeks are recorded, so it is fitted only then. A day's peak is the
largest of its fitted hours; its uncertainty combines the residual spread with the trend's standard error (the
further out, the wider). ``days_until`` says when the expected peak, and the 5 %/95 % bands, first reach the
threshold (``loadBalancerBrokerOverloadedThresholdPercentage`` for brokers): the earliest date to plan for, the
likely one and the latest.

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
Z95 = 1.645


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


def _design(day, hour, dow, hours, dows):
    cols = [np.ones_like(day, dtype=float), day.astype(float)]
    cols += [(hour == h).astype(float) for h in hours[1:]]  # the first level is the baseline
    if dow is not None:
        cols += [(dow == d).astype(float) for d in dows[1:]]
    return np.column_stack(cols)


def forecast(day: np.ndarray, hour: np.ndarray, dow: np.ndarray, value: np.ndarray, threshold: float,
             horizon: int = HORIZON_DAYS) -> Forecast:
    """``day``: whole days since the window's first (0, 1, …); ``hour`` the hour-of-day bucket of each sample;
    ``dow`` its weekday (0 = Monday); ``value`` the usage, in the threshold's unit."""
    day, hour, dow = np.asarray(day, int), np.asarray(hour, int), np.asarray(dow, int)
    value = np.asarray(value, float)
    ok = np.isfinite(value)
    day, hour, dow, value = day[ok], hour[ok], dow[ok], value[ok]
    if not len(value):
        return Forecast("not enough history", "none", 0, 0, float("nan"), float("nan"))
    days = np.unique(day)
    peaks = [float(value[day == d].max()) for d in days]
    base = dict(history_days=len(days), samples=len(value), current_peak=peaks[-1],
                p95_daily_peak=float(np.percentile(peaks, 95)), daily_peaks=peaks)
    if len(days) < MIN_DAYS:
        return Forecast("not enough history", f"needs {MIN_DAYS} days", **base)
    hours = np.unique(hour)
    weekly = len(days) >= WEEKLY_MIN_DAYS and len(np.unique(dow)) > 1
    dows = np.unique(dow) if weekly else None
    x = _design(day, hour, dow if weekly else None, hours, dows)
    coef, *_ = np.linalg.lstsq(x, value, rcond=None)
    resid = value - x @ coef
    dof = max(1, len(value) - x.shape[1])
    sigma = float(np.sqrt(resid @ resid / dof))
    sxx = float(((day - day.mean()) ** 2).sum()) or 1.0
    last = int(days[-1])
    last_dow = int(dow[day == last][0])

    # The model is additive, so a day's peak hour is the same every day: peak = level + trend·d + the largest
    # hour effect + that day's weekday effect.
    hour_eff = np.concatenate([[0.0], coef[2:1 + len(hours)]])
    dow_eff = dict(zip(dows.tolist(), np.concatenate([[0.0], coef[1 + len(hours):]]))) if weekly else {}
    ahead = np.arange(last + 1, last + horizon + 1)
    weekday = (last_dow + ahead - last) % 7
    expected = coef[0] + coef[1] * ahead + hour_eff.max() + np.array([dow_eff.get(int(w), 0.0) for w in weekday])
    se = sigma * np.sqrt(1.0 + 1.0 / len(value) + (ahead - day.mean()) ** 2 / sxx)
    high, low = expected + Z95 * se, expected - Z95 * se

    def first(series: np.ndarray) -> int | None:
        hit = np.flatnonzero(series >= threshold)
        return int(hit[0]) + 1 if len(hit) else None

    status = "above threshold" if peaks[-1] >= threshold else "ok"
    return Forecast(status, "trend + daily + weekly" if weekly else "trend + daily", **base,
                    trend_per_day=float(coef[1]), days_until=first(expected), days_until_earliest=first(high),
                    days_until_latest=first(low), expected=expected[:CHART_DAYS].tolist(),
                    low=low[:CHART_DAYS].tolist(), high=high[:CHART_DAYS].tolist())
