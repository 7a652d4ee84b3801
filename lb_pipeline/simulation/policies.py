"""What placement reads besides the load, per snapshot: anti-affinity groups, failure domains, isolation policies,
and the bundles serving non-persistent topics (which only brokers serving them may take).

Placement and the shedding gates (anti-affinity, isolation) depend on them, so a simulation without them would
move bundles Pulsar would keep. Each cycle uses the maps of the snapshot it falls in.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field

from lb_pipeline.algorithms.shedding.isolation import isolation_policies
from lb_pipeline.algorithms.shedding.selection import ClusterState


@dataclass
class Policies:
    times: list[int] = field(default_factory=list)  # epoch ms, ascending
    # (groups, domains, isolation policies, bundles serving non-persistent topics)
    maps: list[tuple[dict, dict, list, frozenset]] = field(default_factory=list)

    def add(self, t_ms: int, groups: dict | None, domains: dict | None, isolation: dict | None,
            non_persistent=None) -> None:
        k = bisect.bisect_left(self.times, t_ms)
        self.times.insert(k, t_ms)
        self.maps.insert(k, (dict(groups or {}), dict(domains or {}), isolation_policies(isolation or {}),
                             frozenset(non_persistent or ())))

    def state(self, live: list[str], t_ms: int) -> ClusterState:
        k = bisect.bisect_right(self.times, t_ms) - 1
        if k < 0:
            return ClusterState(live)
        groups, domains, isolation, non_persistent = self.maps[k]
        return ClusterState(live, isolation, groups, domains, non_persistent)

    @classmethod
    def from_rows(cls, rows) -> "Policies":
        """Rows of ``transforms.gold.cluster_policies`` (t_ms, groups, isolation and domains as JSON objects;
        isolation values are the policies' own JSON text; ``non_persistent``, where present, a JSON array)."""
        out = cls()
        for r in rows:
            isolation = {k: json.loads(v) for k, v in json.loads(r["isolation"] or "{}").items()}
            flagged = r.get("non_persistent")
            out.add(int(r["t_ms"]), json.loads(r["groups"] or "{}"), json.loads(r["domains"] or "{}"), isolation,
                    json.loads(flagged) if isinstance(flagged, str) else None)
        return out
