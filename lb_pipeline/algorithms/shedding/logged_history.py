"""ThresholdShedder's history as the leader logged it, for a replay to start from instead of a seed it never saw.

ThresholdShedder keeps each broker's usage as ``history × 0.9 + usage × 0.1`` from the leader's first cycle
(``warm_up.py``); a record that starts after the election seeds it with the first snapshot's usage, which can be
far from the leader's (measured on two real records, docs/validation.md: the leader broker's start-up CPU, 46-50 %,
seeded its history one or two cycles before the first snapshot; the leader logged 43.5 % where the replay had
28.4 %, and the nightly replay predicted none of its 4 and 10 unloads). Every cycle in which a broker sheds, the
leader logs that broker's history and the average::

    Attempting to shed load on {broker}, which has max resource usage above avgUsage and threshold
    {history}% > {average}% + {threshold}% -- Offloading at least …

A replay takes the last such line logged before its cycle (by the leader elected last: a line from before an
election is another load manager's state) as the state after that line's cycle (``ThresholdShedder.anchor``), then
steps it with its own usage for the leader's cycles between that line and its cycle. The nightly replay reads the
lines from ``bronze/lb_events`` (``transforms/leader_state.py``), the closed loop from the snapshots' logs. Log lines
are untrusted: a value that is not a finite number between 0 and ``MAX_PERCENT`` is not taken.
"""

from __future__ import annotations

import math
import re

_NUMBER = r"([0-9]+(?:\.[0-9]+)?(?:[Ee][+-]?[0-9]+)?)"
LINE = rf"above avgUsage and threshold {_NUMBER}% > {_NUMBER}% \+"
MAX_PERCENT = 1e6  # more is no usage a report can carry (a hostile log line)


def from_events(rows) -> tuple[list[list], list[int]]:
    """(the ThresholdShedder lines as ``[broker, epoch ms, history %, average %]``, the elections' epoch ms) of
    ``bronze/lb_events``-shaped rows (``formats.events.parse_lb_events``)."""
    lines, elections = [], []
    for r in rows:
        ms = round(r["event_ts"].timestamp() * 1000)
        if r["kind"] == "leader":
            elections.append(ms)
        detail = r.get("detail")
        m = re.search(LINE, detail) if r["kind"] == "shed-attempt" and isinstance(detail, str) else None
        if m:
            lines.append([r["from_broker"], str(ms), m.group(1), m.group(2)])
    return lines, sorted(elections)


def _percent(value) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x / 100.0 if math.isfinite(x) and 0.0 <= x <= MAX_PERCENT else None


class LoggedHistory:
    """The leader's logged ThresholdShedder state, advanced snapshot by snapshot in time order."""

    def __init__(self):
        self.elected_ms = -1
        self.anchored: dict[str, int] = {}  # broker → the time of the first logged line its history was taken from
        self._taken = -1

    def reset(self) -> None:
        """A new load manager: nothing it logged before is its state."""
        self.anchored, self._taken = {}, -1

    def latest(self, now_ms: int, lines: list, elected_ms) -> tuple[str, int, float, float] | None:
        """The last usable line logged at or before ``now_ms`` and after the last election, once (None if none
        is new)."""
        if isinstance(elected_ms, int) and not isinstance(elected_ms, bool):
            self.elected_ms = max(self.elected_ms, elected_ms)
        best = None
        for line in lines or ():
            if not isinstance(line, list) or len(line) != 4:
                continue
            broker, ms, history, average = line[0], line[1], _percent(line[2]), _percent(line[3])
            try:
                ms = int(ms)
            except (TypeError, ValueError):
                continue
            if (not isinstance(broker, str) or history is None or average is None
                    or not self.elected_ms < ms <= now_ms or ms <= self._taken):
                continue
            if best is None or ms > best[1]:
                best = (broker, ms, history, average)
        if best is not None:
            self._taken = best[1]
        return best

    def apply(self, strategy, now_ms: int, lines: list, elected_ms, brokers: list[str], step,
              interval_ms: int) -> str | None:
        """Before the cycle that runs at ``now_ms``: anchor ``strategy`` (a ``ThresholdShedder``) to the latest new
        line logged by then, then ``step()`` once for each of the leader's cycles between that line's and this one
        (whole intervals, rounded: the cycles drift by what each takes); returns what was taken, for the note."""
        line = self.latest(now_ms, lines, elected_ms)
        if line is None or line[0] not in brokers:
            return None
        broker, ms, history, average = line
        strategy.anchor(broker, history, average, brokers)
        self.anchored.setdefault(broker, ms)
        between = max(0, round((now_ms - ms) / max(1, interval_ms)) - 1)  # cycles drift a little: rounded
        for _ in range(between):
            step()
        return (f"ThresholdShedder's history from the leader's log ({broker} {history:.1%}, average {average:.1%}"
                f"{f', stepped {between} cycle(s) since' if between else ''})")
