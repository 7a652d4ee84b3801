"""Key lists for Java's ``HashMap``/``ConcurrentHashMap`` iteration orders and for TimSort with AvgShedder
4.0.7's ``(int)`` comparator (``java/JavaOrders.java`` answers them; ``lb_pipeline.model.javahash``/``javasort``
must agree). Deterministic: the test regenerates the inputs from the case ids."""

from __future__ import annotations

import itertools
import random

from tests.conformance.cases import broker_names


def colliding(prefix: str, blocks: int) -> list[str]:
    """2**blocks strings with one ``String.hashCode`` ("Aa" and "BB" hash alike): one hash bucket at any size."""
    return [prefix + "".join(p) for p in itertools.product(("Aa", "BB"), repeat=blocks)]


def keys(case: int) -> tuple[str, list[str]]:
    """(kind, fields) of one case: kinds "hashmap", "chm", "hashmap-reused" (groups split by ""), "int-sort"."""
    rnd = random.Random(f"java-orders-{case}")
    kind = ("hashmap", "chm", "hashmap-reused", "int-sort")[case % 4]
    if kind == "int-sort":
        n = rnd.choice((2, 5, 17, 31, 32, 33, 60, 100, 250))
        spread = rnd.choice((1.5, 5.0, 100.0))
        return kind, [repr(round(rnd.uniform(0, spread), rnd.choice((0, 1, 3)))) for _ in range(n)]
    n = rnd.choice((1, 5, 12, 13, 24, 25, 48, 49, 100, 700, 3000))
    style = rnd.randrange(3)
    if style == 0:
        items = broker_names(rnd, n)
    elif style == 1:
        items = [f"tenant-{rnd.randrange(5)}/ns-{rnd.randrange(9)}/0x{rnd.randrange(1 << 32):08x}_0xffffffff"
                 for _ in range(n)]
    else:  # colliding names, several buckets' worth, interleaved with ordinary ones
        items = colliding("t/ns/", rnd.choice((3, 4, 5))) + [f"x{j}" for j in range(rnd.choice((0, 10, 60)))]
        rnd.shuffle(items)
    items = list(dict.fromkeys(items))
    if kind == "hashmap-reused":
        groups, out = rnd.randint(2, 4), []
        for g in range(groups):
            size = rnd.randint(1, len(items))
            out += rnd.sample(items, size) + ([""] if g < groups - 1 else [])
        return kind, out
    return kind, items


def java_order_inputs(count: int = 240) -> list[list[str]]:
    out = []
    for i in range(count):
        kind, items = keys(i)
        out.append([f"order-{i:04d}", kind, *items])
    return out
