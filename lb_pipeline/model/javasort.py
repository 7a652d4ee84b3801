"""``java.util.TimSort`` (JDK 17), for comparators that are not a total order.

Any correct stable sort gives Java's result when the comparator is consistent. Pulsar 4.0.7's AvgShedder sorts
broker scores with ``(o1, o2) -> (int) (o1 - o2)``: scores less than one point apart compare equal although a
third score may separate them, so the result depends on the exact sequence of comparisons TimSort makes (binary
insertion below 32 elements, then runs, merges and galloping), and TimSort can even throw
``IllegalArgumentException: Comparison method violates its general contract!``. This is a line-by-line port of
``TimSort.sort(a, lo, hi, c, null, 0, 0)`` as ``Arrays.sort`` and ``Stream.sorted`` call it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from lb_pipeline.model.java_values import int_cast
from lb_pipeline.model.timsort_steps import (
    MIN_MERGE, binary_sort, count_run_and_make_ascending, gallop_left, gallop_right, min_run_length,
)

T = TypeVar("T")
MIN_GALLOP = 7


class ComparisonContractViolation(ValueError):
    """Java's ``IllegalArgumentException("Comparison method violates its general contract!")``."""


def java_int_diff(a: float, b: float) -> int:
    """``(int) (a - b)``: toward zero, saturating (infinities too), NaN → 0."""
    return int_cast(a - b)


def timsort(items: list[T], compare: Callable[[T, T], int]) -> list[T]:
    """A new list sorted exactly as Java's ``TimSort`` would sort ``items`` with ``compare``."""
    a = list(items)
    _TimSort(a, compare).sort()
    return a


class _TimSort:
    def __init__(self, a: list, c: Callable) -> None:
        self.a, self.c = a, c
        self.min_gallop = MIN_GALLOP
        self.run_base: list[int] = []
        self.run_len: list[int] = []

    def sort(self) -> None:
        a, c = self.a, self.c
        lo, hi = 0, len(a)
        remaining = hi - lo
        if remaining < 2:
            return
        if remaining < MIN_MERGE:
            init = count_run_and_make_ascending(a, lo, hi, c)
            binary_sort(a, lo, hi, lo + init, c)
            return
        min_run = min_run_length(remaining)
        while True:
            run = count_run_and_make_ascending(a, lo, hi, c)
            if run < min_run:
                force = remaining if remaining <= min_run else min_run
                binary_sort(a, lo, lo + force, lo + run, c)
                run = force
            self.run_base.append(lo)
            self.run_len.append(run)
            self._merge_collapse()
            lo += run
            remaining -= run
            if remaining == 0:
                break
        while len(self.run_len) > 1:  # mergeForceCollapse
            n = len(self.run_len) - 2
            if n > 0 and self.run_len[n - 1] < self.run_len[n + 1]:
                n -= 1
            self._merge_at(n)

    def _merge_collapse(self) -> None:
        rl = self.run_len
        while len(rl) > 1:
            n = len(rl) - 2
            if (n > 0 and rl[n - 1] <= rl[n] + rl[n + 1]) or (n > 1 and rl[n - 2] <= rl[n] + rl[n - 1]):
                if rl[n - 1] < rl[n + 1]:
                    n -= 1
            elif n < 0 or rl[n] > rl[n + 1]:
                break
            self._merge_at(n)

    def _merge_at(self, i: int) -> None:
        a, c = self.a, self.c
        base1, len1 = self.run_base[i], self.run_len[i]
        base2, len2 = self.run_base[i + 1], self.run_len[i + 1]
        self.run_len[i] = len1 + len2
        del self.run_base[i + 1]
        del self.run_len[i + 1]
        k = gallop_right(a[base2], a, base1, len1, 0, c)
        base1 += k
        len1 -= k
        if len1 == 0:
            return
        len2 = gallop_left(a[base1 + len1 - 1], a, base2, len2, len2 - 1, c)
        if len2 == 0:
            return
        if len1 <= len2:
            self._merge_lo(base1, len1, base2, len2)
        else:
            self._merge_hi(base1, len1, base2, len2)

    def _merge_lo(self, base1: int, len1: int, base2: int, len2: int) -> None:
        a, c = self.a, self.c
        tmp = a[base1:base1 + len1]
        cur1, cur2, dest = 0, base2, base1
        a[dest] = a[cur2]
        dest, cur2, len2 = dest + 1, cur2 + 1, len2 - 1
        if len2 == 0:
            a[dest:dest + len1] = tmp[cur1:cur1 + len1]
            return
        if len1 == 1:
            a[dest:dest + len2] = a[cur2:cur2 + len2]
            a[dest + len2] = tmp[cur1]
            return
        min_gallop = self.min_gallop
        done = False
        while not done:
            count1 = count2 = 0
            while True:
                if c(a[cur2], tmp[cur1]) < 0:
                    a[dest] = a[cur2]
                    dest, cur2, count2, count1, len2 = dest + 1, cur2 + 1, count2 + 1, 0, len2 - 1
                    if len2 == 0:
                        done = True
                        break
                else:
                    a[dest] = tmp[cur1]
                    dest, cur1, count1, count2, len1 = dest + 1, cur1 + 1, count1 + 1, 0, len1 - 1
                    if len1 == 1:
                        done = True
                        break
                if (count1 | count2) >= min_gallop:
                    break
            if done:
                break
            while True:
                count1 = gallop_right(a[cur2], tmp, cur1, len1, 0, c)
                if count1 != 0:
                    a[dest:dest + count1] = tmp[cur1:cur1 + count1]
                    dest, cur1, len1 = dest + count1, cur1 + count1, len1 - count1
                    if len1 <= 1:
                        done = True
                        break
                a[dest] = a[cur2]
                dest, cur2, len2 = dest + 1, cur2 + 1, len2 - 1
                if len2 == 0:
                    done = True
                    break
                count2 = gallop_left(tmp[cur1], a, cur2, len2, 0, c)
                if count2 != 0:
                    a[dest:dest + count2] = a[cur2:cur2 + count2]
                    dest, cur2, len2 = dest + count2, cur2 + count2, len2 - count2
                    if len2 == 0:
                        done = True
                        break
                a[dest] = tmp[cur1]
                dest, cur1, len1 = dest + 1, cur1 + 1, len1 - 1
                if len1 == 1:
                    done = True
                    break
                min_gallop -= 1
                if not (count1 >= MIN_GALLOP or count2 >= MIN_GALLOP):
                    break
            if done:
                break
            min_gallop = max(min_gallop, 0) + 2
        self.min_gallop = max(min_gallop, 1)
        if len1 == 1:
            a[dest:dest + len2] = a[cur2:cur2 + len2]
            a[dest + len2] = tmp[cur1]
        elif len1 == 0:
            raise ComparisonContractViolation("Comparison method violates its general contract!")
        else:
            a[dest:dest + len1] = tmp[cur1:cur1 + len1]

    def _merge_hi(self, base1: int, len1: int, base2: int, len2: int) -> None:
        a, c = self.a, self.c
        tmp = a[base2:base2 + len2]
        cur1, cur2, dest = base1 + len1 - 1, len2 - 1, base2 + len2 - 1
        a[dest] = a[cur1]
        dest, cur1, len1 = dest - 1, cur1 - 1, len1 - 1
        if len1 == 0:
            a[dest - (len2 - 1):dest + 1] = tmp[0:len2]
            return
        if len2 == 1:
            dest -= len1
            cur1 -= len1
            a[dest + 1:dest + 1 + len1] = a[cur1 + 1:cur1 + 1 + len1]
            a[dest] = tmp[cur2]
            return
        min_gallop = self.min_gallop
        done = False
        while not done:
            count1 = count2 = 0
            while True:
                if c(tmp[cur2], a[cur1]) < 0:
                    a[dest] = a[cur1]
                    dest, cur1, count1, count2, len1 = dest - 1, cur1 - 1, count1 + 1, 0, len1 - 1
                    if len1 == 0:
                        done = True
                        break
                else:
                    a[dest] = tmp[cur2]
                    dest, cur2, count2, count1, len2 = dest - 1, cur2 - 1, count2 + 1, 0, len2 - 1
                    if len2 == 1:
                        done = True
                        break
                if (count1 | count2) >= min_gallop:
                    break
            if done:
                break
            while True:
                count1 = len1 - gallop_right(tmp[cur2], a, base1, len1, len1 - 1, c)
                if count1 != 0:
                    dest, cur1, len1 = dest - count1, cur1 - count1, len1 - count1
                    a[dest + 1:dest + 1 + count1] = a[cur1 + 1:cur1 + 1 + count1]
                    if len1 == 0:
                        done = True
                        break
                a[dest] = tmp[cur2]
                dest, cur2, len2 = dest - 1, cur2 - 1, len2 - 1
                if len2 == 1:
                    done = True
                    break
                count2 = len2 - gallop_left(a[cur1], tmp, 0, len2, len2 - 1, c)
                if count2 != 0:
                    dest, cur2, len2 = dest - count2, cur2 - count2, len2 - count2
                    a[dest + 1:dest + 1 + count2] = tmp[cur2 + 1:cur2 + 1 + count2]
                    if len2 <= 1:
                        done = True
                        break
                a[dest] = a[cur1]
                dest, cur1, len1 = dest - 1, cur1 - 1, len1 - 1
                if len1 == 0:
                    done = True
                    break
                min_gallop -= 1
                if not (count1 >= MIN_GALLOP or count2 >= MIN_GALLOP):
                    break
            if done:
                break
            min_gallop = max(min_gallop, 0) + 2
        self.min_gallop = max(min_gallop, 1)
        if len2 == 1:
            dest -= len1
            cur1 -= len1
            a[dest + 1:dest + 1 + len1] = a[cur1 + 1:cur1 + 1 + len1]
            a[dest] = tmp[cur2]
        elif len2 == 0:
            raise ComparisonContractViolation("Comparison method violates its general contract!")
        else:
            a[dest - (len2 - 1):dest + 1] = tmp[0:len2]
