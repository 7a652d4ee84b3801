"""``lb-pipeline whatif split``: which bundles of a snapshot would split, under which trigger, and where each
algorithm would cut them."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from lb_pipeline.algorithms.splits import AUTOMATIC_ALGORITHMS, automatic_algorithm, split_boundary
from lb_pipeline.algorithms.splits.common import TopicLoad
from lb_pipeline.algorithms.splits.held import HIT_COUNT, held_window
from lb_pipeline.algorithms.splits.triggers import SplitDecision, limit_notes, modular_split_candidates
from lb_pipeline.errors import LbError
from lb_pipeline.model.names import one_line
from lb_pipeline.snapshots.load import Snapshot
from lb_pipeline.whatif import commands
from lb_pipeline.whatif.sustained import MAX_CYCLES, sustained_cycles


@dataclass(frozen=True)
class Child:
    range: str
    topics: int
    msg_rate: float
    throughput: float


@dataclass(frozen=True)
class AlgorithmOutcome:
    algorithm: str
    boundaries: list[str]
    splits: bool
    reason: str
    children: list[Child]
    command: str | None


@dataclass(frozen=True)
class BundleSplitWhatIf:
    bundle: str
    owner: str | None
    topics: int
    msg_rate: float
    throughput: float
    hottest_topic: str | None
    hottest_topic_share: float
    modular: str  # "split", "skipped: …" or "not hot"
    extensible: str
    triggers: list[str]
    outcomes: list[AlgorithmOutcome]
    extensible_cycle: int | None = None  # the cycle of the load (sustained or not) at which the extensible trigger splits it

    @property
    def no_split_helps(self) -> bool:
        """One topic carries most of the load: every child would keep it, so no split relieves the bundle."""
        return self.hottest_topic_share >= 0.8


NO_BUNDLE_DATA = ("not hot by topics and sessions; its message rate and throughput unknown: the snapshot has no "
                  "BundleData for it, whose long-term averages the modular trigger reads (collect --metadata-store)")


def _describe(decision: SplitDecision | None, averages: bool = True) -> str:
    """``averages``: the snapshot holds the bundle's BundleData (without it the modular trigger counts its rates
    as 0, as the leader does for a bundle it has no data of, and the answer says what it could not see)."""
    if decision is None:
        return "not hot" if averages else NO_BUNDLE_DATA
    return "split" if decision.selected else f"skipped: {decision.skipped}"


def whatif_split(snap: Snapshot, namespace: str | None = None, assume_sustained: bool = False,
                 positions: list[int] | None = None) -> list[BundleSplitWhatIf]:
    if namespace is not None and namespace not in snap.layouts:  # else "no bundle is hot" would answer a typo
        known = sorted(snap.layouts)
        raise LbError(f"namespace {namespace!r} is not in snapshot {snap.directory.name}; it has "
                      f"{', '.join(known[:10]) or 'none'}{' …' if len(known) > 10 else ''}")
    config = snap.config
    counts = {ns: len(lay) for ns, lay in snap.layouts.items()}
    topics_by_bundle = snap.bundle_topics()
    loads = {b: [TopicLoad.from_stats(name, s) for name, s in ts.items()] for b, ts in topics_by_bundle.items()}

    def boundary_for(bundle):
        return split_boundary(automatic_algorithm(config), bundle, loads.get(bundle.name, []), config)

    modular = {d.bundle: d for d in modular_split_candidates(snap.reports, snap.bundle_data, counts, config)}
    if assume_sustained:  # this snapshot's stats held until the trigger settles (the note says so past a day)
        threshold = config.get_int(HIT_COUNT)
        sustained_cycles(threshold + 1, f"{HIT_COUNT}={threshold}", snap.notes)
    held = held_window({}, {b: r.get("lastStats") or {} for b, r in snap.reports.items()}, counts, boundary_for,
                       config, MAX_CYCLES if assume_sustained else 1)
    extensible = {bundle: h.decision for (_, bundle), h in held.items()}
    cycles = {bundle: h.cycle for (_, bundle), h in held.items() if h.decision.selected}
    out = []
    for name in sorted(set(modular) | set(extensible)):
        ns, rng = name.rsplit("/", 1)
        if namespace and ns != namespace:
            continue
        bundle = snap.layouts[ns].bundle_by_range(rng) if ns in snap.layouts else None
        if bundle is None:
            continue
        topics = loads.get(name, [])
        total_rate = sum(t.msg_rate for t in topics)
        hottest = max(topics, key=lambda t: t.msg_rate, default=None)
        decision = modular.get(name) or extensible.get(name)
        outcomes = []
        algorithms = list(AUTOMATIC_ALGORITHMS) + (["specified_positions_divide"] if positions else [])
        for alg in algorithms:
            result = split_boundary(alg, bundle, topics, config, positions=positions)
            children = [Child(c.range, sum(c.contains_hash(t.hash) for t in topics),
                              sum(t.msg_rate for t in topics if c.contains_hash(t.hash)),
                              sum(t.throughput for t in topics if c.contains_hash(t.hash))) for c in result.children]
            cmd = commands.split_bundle(ns, rng, alg, list(result.boundaries) if alg == "specified_positions_divide" else None,
                                        config.get_bool("loadBalancerAutoUnloadSplitBundlesEnabled")) if result.splits else None
            outcomes.append(AlgorithmOutcome(alg, result.boundaries_hex(), result.splits, result.failure or result.reason,
                                             children, cmd))
        out.append(BundleSplitWhatIf(
            bundle=name, owner=snap.ownership.get(name), topics=len(topics), msg_rate=total_rate,
            throughput=sum(t.throughput for t in topics), hottest_topic=hottest.name if hottest else None,
            hottest_topic_share=(hottest.msg_rate / total_rate) if hottest and total_rate else 0.0,
            modular=_describe(modular.get(name), name in snap.bundle_data), extensible=_describe(extensible.get(name)),
            triggers=[t.describe() for t in decision.triggered], outcomes=outcomes, extensible_cycle=cycles.get(name)))
    return out


def to_json(results: list[BundleSplitWhatIf]) -> list[dict]:
    return [{**asdict(r), "no_split_helps": r.no_split_helps} for r in results]


def render_text(results: list[BundleSplitWhatIf], snap: Snapshot) -> str:
    lines = [f"Snapshot {snap.directory.name} of {snap.manifest.get('cluster')}: "
             f"default algorithm {snap.config['defaultNamespaceBundleSplitAlgorithm']}"]
    lines += [f"note: {n}" for n in limit_notes(snap.config)]
    if not results:
        lines.append("No bundle exceeds a split threshold.")
    for r in results:
        lines += ["", f"{r.bundle}  (owner {r.owner}; {r.topics} topics, {r.msg_rate:,.0f} msg/s, "
                      f"{r.throughput / 1048576:,.1f} MiB/s)",
                  f"  triggers: {'; '.join(r.triggers)}",
                  f"  modular (BundleSplitterTask): {r.modular}",
                  f"  extensible (DefaultNamespaceBundleSplitStrategyImpl): {r.extensible}"
                  + (f" at cycle {r.extensible_cycle} of the sustained load" if (r.extensible_cycle or 0) > 1 else "")]
        if r.no_split_helps:
            lines.append(f"  note: topic {one_line(r.hottest_topic or '')} carries {r.hottest_topic_share:.0%} of the load; "
                         "no split can relieve this bundle")
        for o in r.outcomes:
            if not o.splits:
                lines.append(f"  {o.algorithm:28} no split: {o.reason}")
                continue
            parts = ", ".join(f"{c.range} ({c.topics} topics, {c.msg_rate:,.0f} msg/s)" for c in o.children)
            lines.append(f"  {o.algorithm:28} at {', '.join(o.boundaries)} -> {parts}")
            lines.append(f"  {'':28} $ {o.command}")
    return "\n".join(lines)
