"""Random inputs for the split algorithms' conformance (``NamespaceBundleSplitAlgorithm.getSplitBoundary`` and the
children ``NamespaceBundleFactory`` makes of its boundaries), in the JSON of the oracle's ``splits`` family.

Deterministic per case id. Inputs lean on the edges: bundles of every size down to a few hashes, the ring's last
bundle (its upper bound is inclusive), topics on the lower bound, equal hashes, one or no topic, idle topics,
limits of 0, specified positions outside, on the bounds of and repeated inside the bundle.
"""

from __future__ import annotations

import random

ALGORITHMS = ("range_equally_divide", "topic_count_equally_divide", "specified_positions_divide",
              "flow_or_qps_equally_divide")
RING = 0xFFFFFFFF


def _bundle(rnd: random.Random) -> tuple[int, int]:
    kind = rnd.randrange(5)
    if kind == 0:
        return 0, RING
    if kind == 1:  # the ring's last bundle
        return RING - rnd.choice((1, 3, 0x10, 0x40000000, 0x7FFFFFFF)), RING
    if kind == 2:  # a few hashes wide
        lower = rnd.randrange(0, RING - 8)
        return lower, lower + rnd.choice((1, 2, 3, 5))
    size = rnd.choice((0x10000, 0x1000000, 0x8000000, 0x40000000))
    lower = rnd.randrange(0, RING // size) * size
    return lower, min(lower + size, RING)


def _hashes(rnd: random.Random, lower: int, upper: int, n: int) -> list[int]:
    width = upper - lower
    style = rnd.randrange(4)
    if style == 0:  # spread
        return [lower + rnd.randrange(width) for _ in range(n)]
    if style == 1:  # few distinct values: equal hashes
        pool = [lower + rnd.randrange(width) for _ in range(max(1, n // 4))]
        return [rnd.choice(pool) for _ in range(n)]
    if style == 2:  # on and near the lower bound
        return [lower + rnd.choice((0, 0, 1, min(2, width - 1))) for _ in range(n)]
    return sorted(lower + rnd.randrange(width) for _ in range(n))  # in hash order


def split_case(i: int) -> dict:
    rnd = random.Random(f"splits-{i}")
    algorithm = ALGORITHMS[i % len(ALGORITHMS)]
    lower, upper = _bundle(rnd)
    n = rnd.choice((0, 1, 2, 3, 5, 8, 20, 60))
    topics = []
    for k, h in enumerate(_hashes(rnd, lower, upper, n)):
        name = f"persistent://tenant/ns/topic-{k}" + (f"-partition-{rnd.randrange(4)}" if rnd.random() < 0.3 else "")
        rate = rnd.choice((0.0, 0.0, 1.0, 500.0, round(rnd.paretovariate(1.1) * 300, 3)))
        throughput = rnd.choice((0.0, 1024.0, round(rnd.paretovariate(1.1) * 2e6, 1)))
        topics.append({"name": name, "hash": h, "msgRate": rate, "throughput": throughput})
    args = {"loadBalancerNamespaceBundleMaxMsgRate": rnd.choice((0, 1, 100, 1000, 30000)),
            "loadBalancerNamespaceBundleMaxBandwidthMbytes": rnd.choice((0, 1, 10, 100)),
            "flowOrQpsDifferenceThresholdPercentage": rnd.choice((0, 10, 50))}
    if algorithm == "specified_positions_divide":
        width = upper - lower
        pool = [lower, upper, lower - 1, upper + 1, *(lower + rnd.randrange(width) for _ in range(3))]
        args["positions"] = [p for p in (rnd.choice(pool) for _ in range(rnd.choice((0, 1, 2, 4)))) if 0 <= p <= RING]
    return {"name": f"conformance-splits-{i:04d}", "algorithm": algorithm,
            "bundle": f"0x{lower:08x}_0x{upper:08x}", "topics": topics, "args": args}


_EDGES = ("my-topic", "t/n/x", "t/n", "t/c/n/x", "PERSISTENT://t/n/x", "Non-Persistent://t/n/x", "persistent://t/n/",
          "persistent://t/n/ ", "persistent://t//x", "persistent://t/n", "persistent://t/c/n/x/y", "bogus://t/n/x",
          "persistent://te nant/n/x", "persistent://t/n/x-partition-7", "persistent://t/n/ü-tópic", "x-partition-0",
          "persistent://pulsar/system/transaction_coordinator_assign-partition-0", "persistent://t/n/a b:c=d",
          "persistent://t/n/\r", "persistent://t/n/\u00a0", "persistent://t/n/\u2003\t")


def hashing_case(i: int) -> dict:
    """Topic names, short and full, valid and not, each looked up in a random layout of its namespace
    (``TopicName``, ``NamespaceBundleFactory.getLongHashCode``, ``NamespaceBundles.findBundle``)."""
    rnd = random.Random(f"hashing-{i}")
    names = [rnd.choice(_EDGES) for _ in range(4)]
    for _ in range(20):
        local = "".join(rnd.choice("abcxyz-_.:=0123456789é") for _ in range(rnd.randrange(1, 40)))
        names.append(f"{rnd.choice(('persistent', 'non-persistent'))}://tenant-{rnd.randrange(3)}/ns-{rnd.randrange(3)}/"
                     + local + (f"-partition-{rnd.randrange(8)}" if rnd.random() < 0.3 else ""))
    cases = []
    for name in names:
        n = rnd.choice((1, 2, 4, 7, 16, 64))
        cases.append({"topic": name, "boundaries": [k * (0x100000000 // n) for k in range(n)] + [RING]})
    return {"name": f"conformance-hashing-{i:04d}", "cases": cases}
