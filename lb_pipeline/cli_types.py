"""Argument types of ``lb-pipeline``: each returns the value or raises ValueError, which argparse reports with the
argument's name and the value (``argument --day: invalid day value: '2026-13-01'``) before anything runs."""

from __future__ import annotations

from datetime import datetime

from lb_pipeline.snapshots.layout import day_problem


def day(text: str) -> str:
    """A UTC day as the lake's partitions name it (YYYY-MM-DD, a real date): the day also selects what a write
    replaces, so nothing else may pass."""
    if day_problem(text):
        raise ValueError(text)
    return text


def positions(text: str) -> list[int]:
    """Comma-separated hash positions for specified_positions_divide, hex (0x…) or decimal."""
    return [int(p, 0) for p in text.split(",")]


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` of a Pulsar configuration key."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(text)
    return key.strip(), value.strip()


def utc_time(text: str) -> str:
    """An ISO time, ``2026-01-15T00:00:00Z``."""
    datetime.fromisoformat(text.replace("Z", "+00:00"))
    return text


def _checked(name: str, convert, ok, doc: str):
    """An argument type of ``convert`` that refuses what ``ok`` does not take (argparse names it by ``name``)."""
    def check(text: str):
        if not ok(value := convert(text)):
            raise ValueError(text)
        return value
    check.__name__, check.__doc__ = name, doc
    return check


count = _checked("count", int, lambda v: v >= 0, "A whole number, 0 or more (a seed, retries).")
size = _checked("size", int, lambda v: v > 0, "A whole number above 0 (bytes, runs).")
positive = _checked("positive", float, lambda v: v > 0,  # not NaN either
                    "A number above 0: a timeout of 0 makes a socket non-blocking.")
lead = _checked("lead", float, lambda v: 0 < v <= 300,
               "Seconds before the leader's cycle, above 0 and at most 300 (an interval is a minute or more).")
tolerance = _checked("tolerance", float, lambda v: v >= 0, "A relative tolerance, 0 or more (below 0, every sum is off).")


def broker_log(text: str) -> tuple[str, str]:
    """``host:port=path``: a broker id (checked as Pulsar's) and its log file."""
    from lb_pipeline.model.names import broker_problem

    broker, sep, path = text.partition("=")
    if not sep or not path or broker_problem(broker):
        raise ValueError(text)
    return broker, path
