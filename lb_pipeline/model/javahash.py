"""Java's hash-map iteration orders, for the ties Pulsar breaks by them.

Pulsar's load balancer keeps its state in ``ConcurrentHashMap`` (``LoadData``) and copies it into ``HashMap``s
(``getBundleDataForLoadShedding``, AvgShedder's score map) before stable sorts; equal values then keep the hash
order, and sums run in that order. Reproducing the order makes those ties (and the last bit of those sums) come
out as in Pulsar instead of "some valid order".

* ``String.hashCode``: ``h = 31*h + c`` over UTF-16 code units, 32-bit wrap.
* ``HashMap``: bucket ``(h ^ h>>>16) & (cap-1)``; a bucket keeps insertion order through resizes (lo/hi split);
  the table doubles when ``++size > 0.75*cap`` or when a bucket reaches 9 entries below 64 buckets.
* ``ConcurrentHashMap``: same bucket function; a resize (at ``count >= sizeCtl``) rebuilds each bucket as the
  reversed prefix before its "last run" followed by that run, so order is history dependent; buckets of 9+ entries
  in tables of 64+ become tree bins, which put new entries first.

Not modelled: ``HashMap`` tree bins (9 colliding keys in one bucket of a 64+ table; the red-black root moves to the
front). Such a bucket keeps insertion order here and :func:`hash_map_order` says so through ``exact=False``.
Keys are iterated in the caller's insertion order: for a live leader that is the order brokers and bundles were
first seen, which lb_pipeline does not know, so ties inside one hash bucket are the only remaining approximation.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

_MASK = 0xFFFFFFFF


@lru_cache(maxsize=1 << 20)
def string_hash(s: str) -> int:
    """``String.hashCode()`` as an unsigned 32-bit int."""
    h = 0
    data = s.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] | (data[i + 1] << 8))) & _MASK
    return h


def spread(h: int) -> int:
    """``HashMap.hash`` / ``ConcurrentHashMap.spread`` (the sign bit CHM clears never reaches a bucket index)."""
    return (h ^ (h >> 16)) & _MASK


class JavaHashMap:
    """A ``java.util.HashMap<String, ?>`` reduced to what decides iteration order: its capacity, which only grows
    (``clear()`` keeps the table). :meth:`order` inserts keys into the cleared map and returns iteration order."""

    def __init__(self) -> None:
        self.capacity = 16
        self.exact = True

    def order(self, keys: Iterable[str]) -> list[str]:
        order, self.capacity, self.exact = _hash_map_order(tuple(keys), self.capacity)
        return list(order)


@lru_cache(maxsize=256)  # replays fill maps with the same keys cycle after cycle
def _hash_map_order(keys: tuple[str, ...], capacity: int) -> tuple[tuple[str, ...], int, bool]:
    """(iteration order, capacity after, exact) of a HashMap of ``capacity`` filled with ``keys`` after clear()."""
    keys = tuple(dict.fromkeys(keys))  # a put of an existing key changes nothing
    hashes = [spread(string_hash(k)) for k in keys]
    cap = capacity
    counts: dict[int, int] = {}
    for size, h in enumerate(hashes, start=1):
        b = h & (cap - 1)
        counts[b] = counts.get(b, 0) + 1
        if counts[b] >= 9 and cap < 64:  # treeifyBin on a small table resizes instead
            cap, counts = _grow(cap, hashes[:size])
        if size > cap * 3 // 4:
            cap, counts = _grow(cap, hashes[:size])
    exact = cap < 64 or all(c < 9 for c in counts.values())
    order = sorted(range(len(keys)), key=lambda i: hashes[i] & (cap - 1))  # stable: bucket, then insertion
    return tuple(keys[i] for i in order), cap, exact


def _grow(cap: int, inserted: list[int]) -> tuple[int, dict[int, int]]:
    cap *= 2
    counts: dict[int, int] = {}
    for h in inserted:
        counts[h & (cap - 1)] = counts.get(h & (cap - 1), 0) + 1
    return cap, counts


def hash_map_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a fresh ``HashMap`` filled with ``keys`` in this order (e.g. ``Collectors.toMap``)."""
    return JavaHashMap().order(keys)


def concurrent_hash_map_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a fresh ``ConcurrentHashMap`` filled with ``keys`` in this order (single-threaded)."""
    return list(_chm_order(tuple(keys)))


@lru_cache(maxsize=256)  # replays rebuild maps of the same keys cycle after cycle
def _chm_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    n, size_ctl, count = 16, 12, 0
    table: list[list[tuple[int, str]]] = [[] for _ in range(n)]
    trees: set[int] = set()  # bucket indexes holding a TreeBin
    for key in keys:
        h = spread(string_hash(key)) & 0x7FFFFFFF
        i = h & (n - 1)
        bucket = table[i]
        if any(k == key for _, k in bucket):
            continue
        existing = len(bucket)
        if i in trees:
            bucket.insert(0, (h, key))  # TreeBin.putTreeVal links the new node first
        else:
            bucket.append((h, key))
        count += 1
        if i not in trees and existing >= 8:  # treeifyBin
            if n < 64:
                target = _table_size_for(2 * n + n + 1)  # tryPresize(n << 1)
                while target > size_ctl:
                    table, trees, n = _transfer(table, trees, n)
                    size_ctl = n - (n >> 2)
            else:
                trees.add(i)
        while count >= size_ctl:
            table, trees, n = _transfer(table, trees, n)
            size_ctl = n - (n >> 2)
    return tuple(k for bucket in table for _, k in bucket)


def _table_size_for(c: int) -> int:
    n = 1
    while n < c:
        n <<= 1
    return n


def _transfer(table, trees, n):
    """``ConcurrentHashMap.transfer`` of every bucket into a table twice the size."""
    new = [[] for _ in range(2 * n)]
    new_trees = set()
    for i, bucket in enumerate(table):
        if not bucket:
            continue
        if i in trees:  # tree bins split in order; each half stays a tree above 6 entries
            lo = [e for e in bucket if not e[0] & n]
            hi = [e for e in bucket if e[0] & n]
            for half, j in ((lo, i), (hi, i + n)):
                new[j] = half
                if len(half) > 6:
                    new_trees.add(j)
            continue
        run_bit, last_run = bucket[0][0] & n, 0
        for j in range(1, len(bucket)):
            b = bucket[j][0] & n
            if b != run_bit:
                run_bit, last_run = b, j
        lo = [e for e in bucket[last_run:]] if run_bit == 0 else []
        hi = [e for e in bucket[last_run:]] if run_bit != 0 else []
        for e in bucket[:last_run]:  # nodes before the last run are prepended, i.e. reversed
            (hi if e[0] & n else lo).insert(0, e)
        new[i], new[i + n] = lo, hi
    return new, new_trees, 2 * n
