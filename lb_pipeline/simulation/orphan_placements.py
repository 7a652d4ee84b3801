"""Where the bundles of a broker that stopped went in a recorded run, against where the closed loop placed them
(``real_validation.score`` reports it; ``gold/simulation_validation``'s ``orphans_*`` columns)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from lb_pipeline.model.names import is_sla_or_heartbeat


def placements(history, placed: list[tuple[int, str, str]]) -> dict:
    """Where the bundles of a broker that stopped went, against the loop's placement of them (``placed``: snapshot,
    bundle, broker, each a bundle the loop placed on lookup). Of the bundles the record had on a broker at one
    snapshot and the broker gone at the next: how many the record shows owned again (a lookup runs when a client
    reconnects: a bundle nobody asks for stays unowned), and how many of those the loop placed, in that snapshot's
    cycle, on the broker the record has them on. Which bundle goes where follows the order of the clients' lookups,
    which no snapshot holds; what a loss scenario rests on is how many bundles and how much traffic each broker
    takes: ``orphans_count_off`` is the re-owned bundles that would have to change broker for the loop's count per
    broker to be the record's (half the sum of the differences, a bundle the loop did not place counted apart), and
    ``orphans_traffic_off`` the same for their msg rate (in + out, at the snapshot before the loss), as a share of
    it (None where nothing was re-owned)."""
    loop = {(i, bundle): dest for i, bundle, dest in placed}
    lost = owned = agree = 0
    count_off = traffic_off = traffic = 0.0
    for i in range(1, len(history.times)):
        gone = [k for k in range(len(history.brokers)) if history.live[i - 1][k] and not history.live[i][k]]
        recorded, simulated = Counter(), Counter()  # broker → (bundles, msg rate) of this loss
        for n in np.flatnonzero(np.isin(history.owner[i - 1], gone)).tolist():
            if is_sla_or_heartbeat(history.bundles[n].rsplit("/", 1)[0]):  # the broker's own: gone with it
                continue
            lost += 1
            owner = int(history.owner[i][n])
            if owner >= 0:
                owned += 1
                rate = float(history.traffic[i - 1][n][0] + history.traffic[i - 1][n][1])
                there = loop.get((i, history.bundles[n]))
                agree += there == history.brokers[owner]
                for side, broker in ((recorded, history.brokers[owner]), (simulated, there)):
                    side[(broker, "bundles")] += 1
                    side[(broker, "rate")] += rate
                traffic += rate
        for key in recorded.keys() | simulated.keys():
            off = abs(recorded[key] - simulated[key]) / 2
            if key[1] == "bundles":
                count_off += off
            else:
                traffic_off += off
    return {"orphans_lost": lost, "orphans_reowned": owned, "orphans_agree": agree,
            "orphans_count_off": int(round(count_off)),
            "orphans_traffic_off": traffic_off / traffic if traffic > 0 else None}
