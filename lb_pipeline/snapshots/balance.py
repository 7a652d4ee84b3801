"""The generator's own load balancer: a synthetic cluster balanced by a chosen Pulsar strategy.

Without it, ownership in generated histories changes only through scripted events, and nothing tests whether the
simulation predicts what a strategy does. With ``generate --balance STRATEGY`` the leader runs that strategy
(``algorithms.shedding.driver``, its state carried) once per snapshot on the reports just written, and the unloads
it decides show in the next snapshot's ownership and in the manifest's ``generator.events``. The snapshots record
the strategy and ``loadBalancerSheddingIntervalMinutes`` = the snapshot interval, so a simulation of "the configured
strategy" runs the same cadence, and ``loadBalancerAutoBundleSplitEnabled`` = false: this leader does not split.
"""

from __future__ import annotations

from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.driver import MODULAR_STRATEGIES, ModularShedding
from lb_pipeline.algorithms.shedding.selection import ClusterState
from lb_pipeline.model.config import IMPL, PulsarConfig


class GeneratorBalancer:
    def __init__(self, strategy: str, interval_minutes: int, seed: int = 0):
        """``seed``: of the placement's random tie-breaks (lb_pipeline's runs use 0 unless told otherwise)."""
        if strategy not in MODULAR_STRATEGIES:
            raise ValueError(f"the generator balances with a modular strategy ({', '.join(MODULAR_STRATEGIES)}), "
                             f"not {strategy!r}")
        self.seed, self.interval_minutes = seed, interval_minutes
        self.start(strategy)

    def start(self, strategy: str) -> None:
        """The leader's load manager (re)starts with ``strategy``: a new instance, no state carried
        (``ModularLoadManagerImpl.initialize``), recorded in the dynamic configuration from then on."""
        self.strategy = strategy
        # it sheds and places; it never splits a bundle, and the configuration the snapshots record says so (a
        # simulation of this cluster that split where its leader could not would leave the record at once)
        self.dynamic = {"loadBalancerSheddingEnabled": "true", "loadBalancerLoadSheddingStrategy": IMPL + strategy,
                        "loadBalancerSheddingIntervalMinutes": str(self.interval_minutes),
                        "loadBalancerAutoBundleSplitEnabled": "false"}
        self.config = PulsarConfig(self.dynamic)
        self.run = ModularShedding.named(strategy, self.config, self.seed)

    def balance(self, cluster, reports: dict[str, dict], bundle_data: dict[str, dict], domains: dict[str, str],
                ts: int, next_ts: int) -> list[dict]:
        """Run one shedding cycle on the snapshot just written (at ``ts``); move the unloaded bundles; return the
        events, dated ``next_ts``: the snapshot whose ownership shows them."""
        state = ClusterState(list(reports), groups=dict(cluster.aa_group), broker_domain=domains)
        result = self.run.run_cycle(LoadData(reports, bundle_data), self.config, ts, state)
        index = {f"{ns}/{rng}": i for i, (ns, rng) in enumerate(zip(cluster.bundle_ns, cluster.bundle_range))}
        events = []
        for u in result.unloads:
            cluster.owner[index[u.bundle]] = cluster.broker_ids.index(u.destination)
            events.append({"type": "unload", "ts": next_ts, "decided_at": ts, "strategy": self.strategy, "bundle": u.bundle,
                           "broker": u.broker, "destination": u.destination, "reason": u.reason})
        return events
