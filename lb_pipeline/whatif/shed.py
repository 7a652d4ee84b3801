"""``lb-pipeline whatif shed``: what each shedding strategy would unload right now from one snapshot."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, replace

from lb_pipeline.algorithms.shedding.common import LoadData, namespace_of
from lb_pipeline.algorithms.shedding.driver import MODULAR_STRATEGIES, STRATEGIES, ModularShedding, apply_unloads
from lb_pipeline.algorithms.shedding.held import held_cycles
from lb_pipeline.algorithms.shedding.transfer_inputs import ExtensibleLoad, derive_from_modular, has_policies
from lb_pipeline.algorithms.shedding.transfer_shedder import TransferShedder
from lb_pipeline.errors import InputError
from lb_pipeline.formats.extensible import check_broker_load_data, check_top_bundles
from lb_pipeline.model.load_manager import configured_strategy, legacy_reason
from lb_pipeline.snapshots import layout
from lb_pipeline.snapshots.load import Snapshot, read_json
from lb_pipeline.whatif import commands
from lb_pipeline.whatif.sustained import sustained_cycles



@dataclass(frozen=True)
class StrategyWhatIf:
    strategy: str
    unloads: list[dict]
    skips: list[dict]
    notes: list[str]
    spread_before: float  # population std of broker msg rates (in+out), msg/s
    spread_after: float
    commands: list[str]


def _rate_spread(load: LoadData) -> float:
    rates = [load.rate(b) for b in load.brokers]
    return statistics.pstdev(rates) if len(rates) > 1 else 0.0


def extensible_load(snap: Snapshot) -> ExtensibleLoad:
    """The snapshot's own BrokerLoadData and top bundles when every broker has both, readable as Pulsar writes
    them; else derived from modular data (the source says why, when a file could not be used)."""
    root, why = snap.directory, None
    try:
        brokers = {b: read_json(root, layout.broker_load_data(b), False, check_broker_load_data) for b in snap.brokers}
        tops = {b: read_json(root, layout.top_bundles(b), False, check_top_bundles) for b in snap.brokers}
    except InputError as exc:
        why = exc
    state = snap.cluster_state()
    if why or None in (*brokers.values(), *tops.values()):
        ext = derive_from_modular(snap.reports, snap.config, snap.timestamp_ms, groups=snap.groups, owners=snap.ownership,
                                  isolation=state.isolation, domains=state.broker_domain)
        return replace(ext, source=f"{ext.source} (the snapshot's own files left out: {why})") if why else ext
    named = set(snap.groups) | {namespace_of(t["bundleName"]) for ts in tops.values() for t in ts}
    return ExtensibleLoad(brokers, tops, list(snap.brokers), dict(snap.ownership),
                          {ns for ns in named if has_policies(ns, snap.groups, state.isolation)},
                          source="BrokerLoadData and top bundles of the snapshot", isolation=state.isolation,
                          groups=dict(snap.groups), broker_domain=state.broker_domain)


def whatif_shed(snap: Snapshot, strategies: list[str], seed: int = 0, assume_sustained: bool = True) -> list[StrategyWhatIf]:
    """Run each strategy once on the snapshot. With ``assume_sustained`` the hit-count based strategies
    (AvgShedder, TransferShedder) are given the snapshot's load for as many cycles as their debounce needs."""
    load, notes = LoadData.from_reports(snap.reports, snap.bundle_data)
    out = []
    for name in strategies:
        if name == "TransferShedder":
            ext = extensible_load(snap)
            shedder = TransferShedder()
            hits, capped = "loadBalancerSheddingConditionHitCountThreshold", []
            threshold = snap.config.get_int(hits)
            cycles = sustained_cycles(threshold + 1, f"{hits}={threshold}", capped) if assume_sustained else 1
            result = held_cycles(lambda _now: shedder.find_bundles_for_unloading(ext, snap.config, snap.timestamp_ms),
                                 snap.timestamp_ms, cycles, 60_000).result
            result.notes[:0] = [f"input: {ext.source}", *capped]
        elif name in MODULAR_STRATEGIES:
            run = ModularShedding.named(name, snap.config, seed)
            cycles, capped = 1, []
            if assume_sustained and name == "AvgShedder":
                high, low = (snap.config.get_int(f"loadBalancerAvgShedderHitCount{x}Threshold") for x in ("High", "Low"))
                cycles = sustained_cycles(max(high, low), f"loadBalancerAvgShedderHitCount{{High,Low}}Threshold={high},{low}",
                                          capped)
            result = held_cycles(lambda now: run.run_cycle(load, snap.config, now, snap.cluster_state()),
                                 snap.timestamp_ms, cycles, 60_000).result
            result.notes[:0] = capped
        else:
            raise ValueError(f"unknown strategy {name!r}; choose from {', '.join(STRATEGIES)}")
        after = apply_unloads(load, result.unloads)
        cmds = [commands.unload_bundle(u.bundle.rsplit("/", 1)[0], u.bundle.rsplit("/", 1)[1], u.destination)
                for u in result.unloads]
        out.append(StrategyWhatIf(name, [asdict(u) for u in result.unloads], [asdict(s) for s in result.skips],
                                  notes + result.notes, _rate_spread(load), _rate_spread(after), cmds))
    return out


def render_text(results: list[StrategyWhatIf], snap: Snapshot) -> str:
    lines = [f"Snapshot {snap.directory.name} of {snap.manifest.get('cluster')} ({len(snap.brokers)} brokers)"]
    why = legacy_reason(snap.config)  # the brokers run none of the strategies below: say so before their moves
    lines.append(f"Configured: {configured_strategy(snap.config)}"
                 + (f", Pulsar's deprecated load manager ({why}): none of these strategies runs" if why else ""))
    for r in results:
        lines += ["", f"{r.strategy}: {len(r.unloads)} bundle(s) to move; msg-rate spread "
                      f"{r.spread_before:,.0f} -> {r.spread_after:,.0f} msg/s"]
        lines += [f"  note: {n}" for n in r.notes]
        for u, cmd in zip(r.unloads, r.commands):
            unit = u["amount_unit"]
            lines.append(f"  {u['broker']} -> {u['destination'] or '(placement at lookup)'}: {u['bundle']} "
                         f"[{u['reason']}: {u['metric']} {u['value']:.4g} vs {u['threshold']:.4g}; "
                         f"bundle {u['bundle_load']:,.0f} of {u['amount']:,.0f} {unit}]")
            lines.append(f"    $ {cmd}")
        for s in r.skips[:10]:
            where = " ".join(x for x in (s["broker"], s["bundle"]) if x)
            lines.append(f"  skipped{' ' + where if where else ''}: {s['reason']}")
    return "\n".join(lines)
