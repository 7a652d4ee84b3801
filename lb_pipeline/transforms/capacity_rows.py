"""The rows of ``gold/capacity_forecast``: its schema, the resources it forecasts and how a forecast or a loss becomes
a row (``capacity`` fits the forecasts, ``capacity_loss`` sizes the losses)."""

from __future__ import annotations

from lb_pipeline.planning.forecast import Forecast

# (percent column in silver/broker_usage, limit column in bronze/broker_reports)
RESOURCES = {"cpu": ("cpu_pct", "cpu_limit"), "memory": ("memory_pct", "memory_limit"),
             "direct_memory": ("direct_memory_pct", "direct_memory_limit"),
             "bandwidth_in": ("bandwidth_in_pct", "bandwidth_in_limit"),
             "bandwidth_out": ("bandwidth_out_pct", "bandwidth_out_limit")}
MAX_USAGE = "max_usage"  # the unweighted max usage OverloadShedder compares with the threshold
MOVES_WITH_BUNDLES = {MAX_USAGE, "cpu", "direct_memory", "bandwidth_in", "bandwidth_out"}  # not the JVM's heap
SCHEMA = (
    "cluster string, snapshot_date string, scope string, subject string, resource string, status string, "
    "method string, history_days int, samples int, current_peak double, p95_daily_peak double, "
    "trend_per_day double, threshold double, days_until_threshold int, days_until_threshold_earliest int, "
    "days_until_threshold_latest int, daily_peaks array<double>, forecast array<double>, "
    "forecast_low array<double>, forecast_high array<double>, lost_brokers array<string>, "
    "usage_after_loss double, headroom double, brokers_to_add int, brokers_to_add_in_30_days int, note string"
)
_COLUMNS = [c.split(" ")[0] for c in SCHEMA.split(", ")]


def row(cluster, day, scope, subject, resource, threshold, f: Forecast | None = None, **values) -> dict:
    row = dict.fromkeys(_COLUMNS)
    row.update(cluster=cluster, snapshot_date=day, scope=scope, subject=subject, resource=resource, threshold=threshold)
    if f is not None:
        row.update(status=f.status, method=f.method, history_days=f.history_days, samples=f.samples,
                   current_peak=f.current_peak, p95_daily_peak=f.p95_daily_peak, trend_per_day=f.trend_per_day,
                   days_until_threshold=f.days_until, days_until_threshold_earliest=f.days_until_earliest,
                   days_until_threshold_latest=f.days_until_latest, daily_peaks=f.daily_peaks, forecast=f.expected,
                   forecast_low=f.low, forecast_high=f.high)
    row.update(values)
    return row


def sized_at(busiest) -> str:
    """How a loss row's note starts: the snapshot the loss was sized at (``at_of`` reads it back)."""
    return f"at {busiest:%Y-%m-%d %H:%M} UTC"


def at_of(note: str | None) -> str | None:
    """The snapshot (``YYYY-MM-DD HH:MM``, UTC) a loss row's note says it was sized at (``sized_at``), or None."""
    note = note or ""
    return note[3:19] if note.startswith("at ") and note[19:23] == " UTC" else None
