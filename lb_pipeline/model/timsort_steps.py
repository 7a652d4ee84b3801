"""The run, insertion and galloping steps of ``java.util.TimSort`` (JDK 17), ported line by line for
``javasort``: ``minRunLength``, ``countRunAndMakeAscending``, ``binarySort``, ``gallopLeft`` and ``gallopRight``.
Which comparisons they make, in which order, decides the result when the comparator is not a total order.
"""

from __future__ import annotations

from collections.abc import Callable

MIN_MERGE = 32


def min_run_length(n: int) -> int:
    r = 0
    while n >= MIN_MERGE:
        r |= n & 1
        n >>= 1
    return n + r


def count_run_and_make_ascending(a: list, lo: int, hi: int, c: Callable) -> int:
    run_hi = lo + 1
    if run_hi == hi:
        return 1
    if c(a[run_hi], a[lo]) < 0:
        run_hi += 1
        while run_hi < hi and c(a[run_hi], a[run_hi - 1]) < 0:
            run_hi += 1
        a[lo:run_hi] = a[lo:run_hi][::-1]
    else:
        run_hi += 1
        while run_hi < hi and c(a[run_hi], a[run_hi - 1]) >= 0:
            run_hi += 1
    return run_hi - lo


def binary_sort(a: list, lo: int, hi: int, start: int, c: Callable) -> None:
    if start == lo:
        start += 1
    for start in range(start, hi):
        pivot = a[start]
        left, right = lo, start
        while left < right:
            mid = (left + right) >> 1
            if c(pivot, a[mid]) < 0:
                right = mid
            else:
                left = mid + 1
        a[left + 1:start + 1] = a[left:start]
        a[left] = pivot


def gallop_left(key, a: list, base: int, length: int, hint: int, c: Callable) -> int:
    last, ofs = 0, 1
    if c(key, a[base + hint]) > 0:
        max_ofs = length - hint
        while ofs < max_ofs and c(key, a[base + hint + ofs]) > 0:
            last, ofs = ofs, (ofs << 1) + 1
        ofs = min(ofs, max_ofs)
        last, ofs = last + hint, ofs + hint
    else:
        max_ofs = hint + 1
        while ofs < max_ofs and c(key, a[base + hint - ofs]) <= 0:
            last, ofs = ofs, (ofs << 1) + 1
        ofs = min(ofs, max_ofs)
        last, ofs = hint - ofs, hint - last
    last += 1
    while last < ofs:
        m = last + ((ofs - last) >> 1)
        if c(key, a[base + m]) > 0:
            last = m + 1
        else:
            ofs = m
    return ofs


def gallop_right(key, a: list, base: int, length: int, hint: int, c: Callable) -> int:
    last, ofs = 0, 1
    if c(key, a[base + hint]) < 0:
        max_ofs = hint + 1
        while ofs < max_ofs and c(key, a[base + hint - ofs]) < 0:
            last, ofs = ofs, (ofs << 1) + 1
        ofs = min(ofs, max_ofs)
        last, ofs = hint - ofs, hint - last
    else:
        max_ofs = length - hint
        while ofs < max_ofs and c(key, a[base + hint + ofs]) >= 0:
            last, ofs = ofs, (ofs << 1) + 1
        ofs = min(ofs, max_ofs)
        last, ofs = last + hint, ofs + hint
    last += 1
    while last < ofs:
        m = last + ((ofs - last) >> 1)
        if c(key, a[base + m]) < 0:
            ofs = m
        else:
            last = m + 1
    return ofs
