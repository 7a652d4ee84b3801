"""What changes from one day to the next in a multi-day generated history (``generate --days N``).

A single generated day is the diurnal cycle plus scripted events. Over many days a real cluster also grows
(more traffic, new topics), is quieter at weekends, and has incidents nobody scripted. ``Seasons`` draws all of
that up front from its own random stream, so one-day histories stay exactly what they were and every multi-day
history is a pure function of (preset, seed, start, days).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

DAY_MS = 86_400_000
GROWTH_PER_DAY = 0.02  # compound traffic growth of every topic
WEEKEND_FACTOR = 0.7  # Saturday and Sunday traffic against a weekday's
INCIDENT_PROBABILITY = 0.25  # per day after the first
LATE_TOPIC_SHARE_PER_DAY = 0.01  # topics created after the first day, per day of history (at most 30 %)


@dataclass(frozen=True)
class Incident:
    day: int
    hour: int
    kind: str  # traffic-spike (a namespace at 3x for 3 hours) or broker-restart
    target: int  # namespace index or broker index
    hours: int = 3


@dataclass(frozen=True)
class Seasons:
    start_ms: int
    days: int
    born_day: np.ndarray  # per topic: the day it is created on (0 = exists from the start)
    incidents: tuple[Incident, ...]

    @staticmethod
    def draw(days: int, start_ms: int, n_topics: int, n_namespaces: int, n_brokers: int, seed: int) -> Seasons:
        rng = np.random.default_rng([seed, days, 20261124])
        born = np.zeros(n_topics, dtype=np.int64)
        if days > 1:
            late = rng.random(n_topics) < min(0.3, LATE_TOPIC_SHARE_PER_DAY * (days - 1))
            born[late] = rng.integers(1, days, size=int(late.sum()))
        incidents = []
        for day in range(1, days):
            if rng.random() < INCIDENT_PROBABILITY:
                if rng.random() < 0.5:
                    incidents.append(Incident(day, int(rng.integers(0, 21)), "traffic-spike", int(rng.integers(0, n_namespaces))))
                else:  # never the brokers the scripted events add, remove or restart
                    incidents.append(Incident(day, int(rng.integers(0, 24)), "broker-restart", int(rng.integers(5, max(6, n_brokers - 1)))))
        return Seasons(start_ms, days, born, tuple(incidents))

    def day_of(self, ts_ms: int) -> int:
        return (ts_ms - self.start_ms) // DAY_MS

    def topic_factor(self, ts_ms: int, topic_ns: np.ndarray) -> np.ndarray:
        """Per topic: growth × weekly season × traffic-spike incidents × created yet (0 or 1)."""
        day = (ts_ms - self.start_ms) / DAY_MS
        when = datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc)
        factor = np.full(len(topic_ns), (1.0 + GROWTH_PER_DAY) ** day * (WEEKEND_FACTOR if when.weekday() >= 5 else 1.0))
        for inc in self.incidents:
            if inc.kind == "traffic-spike" and inc.day == int(day) and inc.hour <= when.hour < inc.hour + inc.hours:
                factor[topic_ns == inc.target] *= 3.0
        return factor * (self.born_day <= int(day))

    def starting(self, ts_ms: int, interval_minutes: int) -> list[Incident]:
        """Incidents that start between the previous snapshot and this one."""
        return [inc for inc in self.incidents
                if ts_ms - interval_minutes * 60_000 < self.start_ms + inc.day * DAY_MS + inc.hour * 3_600_000 <= ts_ms]
