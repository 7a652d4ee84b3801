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
MAX_RUNS = 2_880  # runs replayed per call (4 hours at the default period; averages settle in ~350): earlier ones left out


def percent_change(old: float, new: float) -> float:
    """``percentChange``: 0 → 0 is no change, 0 → anything else infinite."""
    if old == 0:
        return 0.0 if new == 0 else math.inf
    return 100.0 * abs((old - new) / old)


def _math_max(a: float, b: float) -> float:
    """Java's ``Math.max``: NaN wins (unlike ``usage._java_max``, a loop where NaN never does)."""
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
        # once written, the data is the last written: whether a run writes it again all the same (a threshold below 0)
        steady = self._changed(config, local)
        every = first - local.reportedAt > max_interval or self._changed(config)  # the runs write until one does not
        if every:
            self._write(first)
            every = steady
        # the runs after the first see the same inputs: nothing changes but the averages, so only a timed write can
        # come, and only the last write of the call reaches what the store holds; once the averages stop moving,
        # the timed writes come one every `stride` (a period under 1 s with a max interval of 0 wrote at every
        # run: 20,000 copies of the data a call, hours for one night)
        h = float(config.get("loadBalancerHistoryResourcePercentage", 0.9))  # as BrokerLoadData.step reads it
        a, w, tp = 1.0 - h, local.weightedMax, local.throughput
        ema, tema = local.weightedMaxEMA, local.msgThroughputEMA
        at, write = first + period, None  # write: (time, averages, the time of the write before it)
        while at <= last_run:
            e2, t2 = ema * h + a * w, tema * h + a * tp
            if e2 == ema and t2 == tema:
                due = at if every else max(at, ((local.reportedAt + max_interval) // period + 1) * period)
                stride = period if steady else max(1, max_interval // period + 1) * period
                if due <= last_run:
                    timed = (last_run - due) // stride
                    at = due + timed * stride
                    write, local.reportedAt = (at, ema, tema, at - stride if timed else local.reportedAt), at
                break
            ema, tema = e2, t2
            if every or at - local.reportedAt > max_interval:
                write, local.reportedAt, every = (at, ema, tema, local.reportedAt), at, steady
            at += period
        if write is not None:
            at, local.weightedMaxEMA, local.msgThroughputEMA, local.reportedAt = write
            local.updatedAt = at
            self._write(at)
        local.weightedMaxEMA, local.msgThroughputEMA, local.updatedAt = ema, tema, last_run
        self.ran_at = last_run
        return self.stored

    def _changed(self, config: PulsarConfig, last: BrokerLoadData | None = None) -> bool:
        """``needBrokerDataUpdate``'s change test against the data last written (or ``last``)."""
        local, last = self.local, self.last if last is None else last
        change = _math_max(100.0 * abs(last.maxResourceUsage - local.maxResourceUsage), _math_max(
            percent_change(last.msgRateIn + last.msgRateOut, local.msgRateIn + local.msgRateOut), _math_max(
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
