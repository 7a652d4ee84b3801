"""How ``broker-stats topics`` relates to a broker's load report (``lastStats``).

Both come from the broker's same stats, but ``broker-stats topics`` prints every topic's rates and throughputs
cut to three decimals (seen on a real 4.0.7 cluster: 8.999 for 8.99999912, 150.225 for 150.22598), so the topic
sum of a bundle is at most ``0.001 × topics`` *below* the bundle's figure in ``lastStats``, never above.
Counts (topics, producers, consumers) agree exactly.
"""

from __future__ import annotations

DECIMALS = 3
STEP = 10.0 ** -DECIMALS  # the most one topic's printed value falls short of the real one


def sum_agrees(reported: float, topic_sum: float, topics: int, rel_tol: float = 1e-6) -> bool:
    """Whether a bundle's ``lastStats`` value and the sum of its topics' printed values can be the same figure."""
    eps = rel_tol * max(abs(reported), abs(topic_sum), 1.0)
    return -eps <= reported - topic_sum <= STEP * max(topics, 0) + eps
