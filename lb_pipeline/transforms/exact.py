"""Aggregates whose result does not depend on the order Spark feeds them rows in.

A sum of doubles depends, in its last bits, on the order it adds them, and that order is the plan's: the same day
summed with adaptive execution off, with more shuffle partitions or on a cluster gave other last bits in
``silver/bundle_stats`` and everything computed from it (the load model, the capacity forecast, the findings'
evidence), so a night re-run on a cluster did not equal the local night it should equal. Here each value is split,
exactly, into whole units of 2^-20 and the rest in units of 2^-62 (cut there: 2e-19 at most, below what a
double holds of any value above 2^-10); each part adds up as a long, exactly, and the two totals make the double:
the same bits under any plan, in long arithmetic (a ``decimal(38,18)`` sum did the same at ten times the cost of a
plain sum: 5 s more for four columns of 2.4 million rows). A group with a value of 2^33 (8.6e9) or more, or with so
many rows that a part overflows, falls back to Spark's double sum. Ties of ``max_by`` go to the greatest value, not
to whichever row came first.
"""

from __future__ import annotations

from pyspark.sql import Column, WindowSpec
from pyspark.sql import functions as F

UNIT, REST = 2.0 ** 20, 2.0 ** 62  # whole units of 2^-20, the rest in units of 2^-62
LIMIT = 2.0 ** 33  # |value| * UNIT below 2^53: the whole units convert back to a double exactly


def _col(c: str | Column) -> Column:
    return F.col(c) if isinstance(c, str) else c


def _over(agg: Column, window: WindowSpec | None) -> Column:
    return agg if window is None else agg.over(window)


def exact_sum(c: str | Column, window: WindowSpec | None = None) -> Column:
    """The sum of a double column (an aggregate, or a window function over ``window``), the same under any plan."""
    c = _col(c)
    # a long, where the value is below LIMIT (the group's sum is Spark's otherwise); the product is exact (a power
    # of two) and so is the floor; the difference too, in [0, 2^-20), and its units of 2^-62 are floored
    whole = F.when(F.abs(c) < F.lit(LIMIT), F.floor(c * F.lit(UNIT)))
    rest = F.floor((c - whole / F.lit(UNIT)) * F.lit(REST))
    split = _over(F.try_sum(whole), window) / F.lit(UNIT) + _over(F.try_sum(rest), window) / F.lit(REST)
    return F.coalesce(F.when(_over(F.max(F.abs(c)), window) < F.lit(LIMIT), split), _over(F.sum(c), window))


def exact_avg(c: str | Column, window: WindowSpec | None = None) -> Column:
    """The mean of a double column's non-null values (null where there is none), the same under any plan."""
    c = _col(c)
    n = _over(F.count(c), window)
    return F.when(n > 0, exact_sum(c, window) / n)


def max_by(value: str | Column, by: str | Column) -> Column:
    """``max_by(value, by)`` with ties going to the greatest ``value`` (rows without a ``by`` left out, as Spark's)."""
    return F.max_by(_col(value), F.when(_col(by).isNotNull(), F.struct(_col(by), _col(value))))
