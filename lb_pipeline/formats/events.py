"""``logs/<broker>.log``: the load manager's own log lines to rows of ``bronze/lb_events``.

The lines are Pulsar's (``ModularLoadManagerImpl``, ``BundleSplitStrategy``, the shedders, the leader election;
message texts of 3.0 and 4.0 alike), after log4j2's time, thread, level and logger, which the pattern of each
deployment may spell differently: a line is recognised by its message alone. What each kind says:

========================  =====================================================================================
kind                      Pulsar's message (``{}`` as Pulsar fills it)
========================  =====================================================================================
``unload``                ``[{strategy}] Unloading bundle: {bundle} from broker {broker} to dest broker {broker}``
``unload-no-broker``      ``[{strategy}] No broker available to unload bundle {bundle} from broker {broker}``
``unload-same-owner``     ``[{strategy}] The destination broker {broker} is the same as the current owner broker
                          for Bundle {bundle}``
``split``                 ``Load-manager splitting bundle {bundle} and unloading {true|false}``
``split-done``            ``Successfully split namespace bundle {bundle}`` (the load manager's, full name)
``split-failed``          ``Failed to split namespace bundle {bundle}`` (the load manager's, no reason given)
``split-candidate``       ``The bundle {bundle} is considered to be unload. Topics: …`` (``BundleSplitStrategy``)
``shed-attempt``          ``Attempting to shed load on {broker}, which has …`` (Overload- and ThresholdShedder)
``shed-sole-bundle``      ``HIGH USAGE WARNING : Sole namespace bundle {bundle} is overloading broker {broker}. …``
``leader``                ``This broker {broker} was elected leader``
``report-written``        ``Writing local data to metadata store because …`` (the log's broker rewrote its
                          ``LocalBrokerData``; each write makes the leader update every bundle's averages)
``assignment``            ``{n} brokers being considered for assignment of {bundle}`` (``selectBroker``: the
                          cycle's choice of an unload's destination, logged just before its ``unload``, or a
                          lookup's assignment, which preallocates the bundle; ``detail``: n)
========================  =====================================================================================

Anything else is no event (log lines are free text: not quarantined). A recognised line whose bundle or broker is
not a valid Pulsar name is quarantined with the field that is wrong.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from lb_pipeline.formats.values import Problem
from lb_pipeline.model.bundles import printed_range_problem
from lb_pipeline.model.names import broker_problem, namespace_problem

_B = r"(?P<bundle>\S+/0x\w+_0x\w+)"
_PATTERNS = (
    ("unload", re.compile(r"\[(?P<strategy>\w+)\] Unloading bundle: " + _B +
                          r" from broker (?P<from_broker>\S+) to dest broker (?P<to_broker>\S+)")),
    ("unload-no-broker", re.compile(r"\[(?P<strategy>\w+)\] No broker available to unload bundle " + _B +
                                    r" from broker (?P<from_broker>\S+)")),
    ("unload-same-owner", re.compile(r"\[(?P<strategy>\w+)\] The destination broker (?P<to_broker>\S+) is the same as "
                                     r"the current owner broker for Bundle " + _B)),
    ("split", re.compile(r"Load-manager splitting bundle " + _B + r" and unloading (?P<detail>true|false)")),
    ("split-done", re.compile(r"Successfully split namespace bundle " + _B + r"\s*$")),
    ("split-failed", re.compile(r"Failed to split namespace bundle " + _B + r"\s*$")),
    ("split-candidate", re.compile(r"The bundle " + _B + r" is considered to be unload\. (?P<detail>.*)")),
    ("shed-attempt", re.compile(r"Attempting to shed load on (?P<from_broker>\S+?),? which has (?P<detail>.*)")),
    ("shed-sole-bundle", re.compile(r"Sole namespace bundle " + _B + r" is overloading broker (?P<from_broker>\S+?)\.(?:\s|$)")),
    ("leader", re.compile(r"This broker (?P<to_broker>\S+) was elected leader")),
    ("report-written", re.compile(r"Writing local data to metadata store because (?P<detail>.*)")),
    ("assignment", re.compile(r"(?P<detail>\d+) brokers being considered for assignment of " + _B + r"\s*$")),
)
KINDS = tuple(k for k, _ in _PATTERNS)
MAX_DETAIL = 500
# log4j2's date first: 2026-12-02T01:30:00.123Z (ISO8601), 2026-12-02T01:30:00,123+0000 (Pulsar's
# ISO8601_OFFSET_DATE_TIME_HHMM), 2026-12-02 01:30:00.123 (DEFAULT: no zone, read as UTC)
_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?")


# a line dated more than this after its snapshot was taken is none the collector kept up to then: a broker's clock
# ahead by minutes, or a forged line (dated in 9999, it had stopped the night: Arrow cannot hold it in nanoseconds)
LOGGED_AFTER_SNAPSHOT_MS = 300_000


def logged_by_snapshot(event_ms: int | None, snapshot_ms: int) -> bool | None:
    """Whether a line's time is one its snapshot (taken at ``snapshot_ms``, to the second) can hold: not before
    1970, not more than ``LOGGED_AFTER_SNAPSHOT_MS`` after the snapshot."""
    return None if event_ms is None else 0 <= event_ms <= snapshot_ms // 1000 * 1000 + LOGGED_AFTER_SNAPSHOT_MS + 999


def line_time_ms(line: str) -> int | None:
    """The epoch ms a log line starts with, or None."""
    m = _TIME.match(line)
    if not m:
        return None
    day, clock, frac, zone = m.groups()
    try:
        t = datetime.strptime(f"{day}T{clock}", "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        t -= (1 if zone[0] == "+" else -1) * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return int(t.timestamp() * 1000) + int((frac or "0")[:3].ljust(3, "0"))


def parse_lb_events(lines: list[str], broker: str) -> tuple[list[dict], list[Problem]]:
    """Rows of ``bronze/lb_events`` from one broker's log lines; ``line`` numbers them from 1 within the file."""
    rows, problems = [], []
    for number, line in enumerate(lines, 1):
        ts = line_time_ms(line)
        if ts is None:
            continue
        for kind, pattern in _PATTERNS:
            m = pattern.search(line)
            if m:
                break
        else:
            continue
        got = m.groupdict()
        bundle = got.get("bundle")
        problem = None
        namespace, _, bundle_range = (bundle or "").rpartition("/")
        if bundle is not None and (p := namespace_problem(namespace) or printed_range_problem(bundle_range)):
            problem = Problem(f"line {number}: bundle", p)
        for field in ("from_broker", "to_broker"):
            if problem is None and got.get(field) is not None and (p := broker_problem(got[field])):
                problem = Problem(f"line {number}: {field}", p)
        if problem:
            problems.append(problem)
            continue
        rows.append({"broker": broker, "line": number,
                     "event_ts": datetime.fromtimestamp(ts / 1000, tz=timezone.utc), "kind": kind,
                     "strategy": got.get("strategy"), "bundle": bundle, "namespace": namespace or None,
                     "bundle_range": bundle_range or None, "from_broker": got.get("from_broker"),
                     "to_broker": got.get("to_broker"), "detail": (got.get("detail") or "")[:MAX_DETAIL] or None})
    return rows, problems
