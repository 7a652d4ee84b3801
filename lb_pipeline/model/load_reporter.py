"""``extensions/reporter/BrokerLoadDataReporter``: how a broker's ``BrokerLoadData`` reaches the leader.

Every broker on the extensible load manager runs its reporter every ``loadBalancerReportUpdateMinIntervalMillis``
(5 s, ``scheduleAtFixedRate`` in ``ExtensibleLoadManagerImpl.start``). Each run updates the broker's local data (its
averages take a step) but writes it to the load data store, which TransferShedder reads, only when
``needBrokerDataUpdate``: more than ``loadBalancerReportUpdateMaxIntervalMinutes`` (15) since the last write, or a
change since the last written data of more than ``loadBalancerReportUpdateThresholdPercentage`` (10) in max resource
usage (×100), message rate, throughput or bundle count (``percentChange``: from 0 to anything else is infinite). So
the leader sees the average as it was at the last write: one step after a jump in load, then for up to 15 minutes
nothing newer. When a bundle leaves the broker (``Releasing``/``Splitting`` with it as source) or arrives
(``Owned`` with it as destination), ``handleEvent`` clears the local data (the averages start again from the next
report) and removes the stored data (at most once every 10 s), and the next run writes again.

Read with ``javap`` from pulsar-broker 4.0.8. Runs are taken at multiples of the period; ``report`` runs those
since the last call with the inputs it is given (the load of the snapshot or simulated cycle).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from lb_pipeline.model.broker_load_data import BrokerLoadData
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.java_values import java_long, minutes_to_millis

PERIOD = "loadBalancerReportUpdateMinIntervalMillis"
DEFAULT_PERIOD_MS = 5000  # a period of 0 or less: scheduleAtFixedRate refuses it; replayed at the default
TOMBSTONE_DELAY_MS = 10_000
MAX_RUNS = 20_000  # runs replayed per call (a day at the default period is 17,280): earlier ones are left out


def percent_change(old: float, new: float) -> float:
    """``percentChange``: 0 → 0 is no change, 0 → anything else infinite."""
    if old == 0:
        return 0.0 if new == 0 else math.inf
    return 100.0 * abs((old - new) / old)


def _java_max(a: float, b: float) -> float:
    return math.nan if a != a or b != b else max(a, b)


@dataclass
class LoadDataReporter:
    local: BrokerLoadData = field(default_factory=BrokerLoadData)
    last: BrokerLoadData = field(default_factory=BrokerLoadData)  # lastData: the data as last written
    stored: dict | None = None  # what the load data store holds for the broker (None: nothing, or tombstoned)
    ran_at: int | None = None  # the last run replayed
    tombstoned_at: int = 0

    def report(self, inputs: tuple, config: PulsarConfig, now_ms: int) -> dict | None:
        """Run the reporter at every multiple of its period after the last run, up to ``now_ms``, on ``inputs``
        (``BrokerLoadData.update``'s arguments before the config); returns what the store then holds."""
        period = config.get_int(PERIOD)
        period = period if period > 0 else DEFAULT_PERIOD_MS
        last_run = now_ms - now_ms % period
        first = last_run if self.ran_at is None else self.ran_at + period
        if first > last_run:
            return self.stored
        first = max(first, last_run - (MAX_RUNS - 1) * period)
        max_interval = minutes_to_millis(config.get_int("loadBalancerReportUpdateMaxIntervalMinutes"))
        local = self.local
        local.update(*inputs, config, first)  # the load changed since the last call: the first run sees it
        if first - local.reportedAt > max_interval or self._changed(config):
            self._write(first)
        # the runs after the first see the same inputs: nothing changes but the averages, so only a timed write can
        # come; once the averages stop moving, straight to the timed writes
        h = float(config.get("loadBalancerHistoryResourcePercentage", 0.9))  # as BrokerLoadData.step reads it
        a, w, tp = 1.0 - h, local.weightedMax, local.throughput
        ema, tema = local.weightedMaxEMA, local.msgThroughputEMA
        at = first + period
        while at <= last_run:
            e2, t2 = ema * h + a * w, tema * h + a * tp
            if e2 == ema and t2 == tema:
                at = max(at, ((local.reportedAt + max_interval) // period + 1) * period)
                if at > last_run:
                    break
            ema, tema = e2, t2
            if at - local.reportedAt > max_interval:
                local.weightedMaxEMA, local.msgThroughputEMA, local.updatedAt = ema, tema, at
                self._write(at)
            at += period
        local.weightedMaxEMA, local.msgThroughputEMA, local.updatedAt = ema, tema, last_run
        self.ran_at = last_run
        return self.stored

    def _changed(self, config: PulsarConfig) -> bool:
        """``needBrokerDataUpdate``'s change test against the data last written."""
        local, last = self.local, self.last
        change = _java_max(100.0 * abs(last.maxResourceUsage - local.maxResourceUsage), _java_max(
            percent_change(last.msgRateIn + last.msgRateOut, local.msgRateIn + local.msgRateOut), _java_max(
                percent_change(last.msgThroughputIn + last.msgThroughputOut,
                               local.msgThroughputIn + local.msgThroughputOut),
                percent_change(float(last.bundleCount), float(local.bundleCount)))))
        return change > float(config.get_int("loadBalancerReportUpdateThresholdPercentage"))

    def _write(self, at: int) -> None:
        self.stored = self.local.to_json()  # pushed, then marked written (the stored copy keeps the old reportedAt)
        self.local.reportedAt = at
        self.last = replace(self.local, usage=dict(self.local.usage))

    def clear(self, now_ms: int) -> None:
        """``handleEvent`` for a bundle leaving or arriving: local data cleared, stored data removed (``tombstone``
        at most once every 10 s)."""
        self.local.clear()
        if java_long(now_ms - self.tombstoned_at) >= TOMBSTONE_DELAY_MS:
            self.tombstoned_at = now_ms
            self.stored = None
