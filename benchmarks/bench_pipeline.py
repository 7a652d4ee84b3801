"""The nightly run against Spark's floor, on the same day, in one process.

    .venv/bin/python benchmarks/bench_pipeline.py [--preset S|M|L] [--snapshots N] [--skip-floor]
                                                  [--nights N] [--variant KEY=VALUE] [--sites N] [--queries N]

Generates the preset's day under benchmarks/.data/<preset>/ (once), then in one Spark session (as production
runs): the floor job (``floor_job.py``: the irreducible work, plain PySpark) and the whole nightly graph
(assets and checks, as ``dg.materialize`` runs it), each on a fresh lake. Prints both wall times and their ratio,
the share of the data-quality checks, per-step times, Spark jobs per phase, and peak RSS of the Python driver
and of the JVM per phase. Issue 13's targets: M pipeline/floor ≤ 3, validation ≤ 25 %, L/M ≤ 12, L driver ≤ 4 GiB.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import sys
import time
from pathlib import Path

import dagster as dg

from assets.definitions import all_assets
from assets.quality import checks
from assets.resources import LakeResource, LandingResource, ReportsResource, SparkResource
from floor_job import floor_job  # beside this script
from lb_pipeline.snapshots.generate import generate
from lb_pipeline.snapshots.layout import iter_snapshot_dirs


class Meter:
    """Wall time, Spark jobs and peak RSS (this Python process and the JVM) of one phase."""

    def __init__(self, spark):
        self.sc, self.jvm_pid = spark.sparkContext, int(spark._jvm.java.lang.ProcessHandle.current().pid())

    def _last_job(self) -> int:  # job ids are sequential; the newest survives Spark's retention limit
        return max(self.sc.statusTracker().getJobIdsForGroup(None) or [-1])

    def __enter__(self):
        for pid in (os.getpid(), self.jvm_pid):  # reset the kernel's peak-RSS mark (VmHWM) for this phase
            try:
                Path(f"/proc/{pid}/clear_refs").write_text("5")
            except OSError:
                pass
        self.first_job, self.started, self.cpu0 = self._last_job(), time.monotonic(), self._cpu()
        return self

    def _cpu(self) -> tuple[float, float, float]:
        """CPU seconds so far of this Python driver, of the JVM's own threads, and of the JVM's children (Python
        workers: the live ones and the reaped ones)."""
        tick = os.sysconf("SC_CLK_TCK")

        def stat(pid):
            try:
                f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                return 0.0, 0.0
            return (int(f[11]) + int(f[12])) / tick, (int(f[13]) + int(f[14])) / tick

        def descendants(pid):
            for task in Path(f"/proc/{pid}/task").glob("*/children"):
                for child in task.read_text().split():
                    yield child
                    yield from descendants(child)

        me, (jvm, reaped) = os.times(), stat(self.jvm_pid)
        children = sum(sum(stat(pid)) for pid in descendants(self.jvm_pid))
        return me.user + me.system, jvm, reaped + children

    def __exit__(self, *exc):
        self.seconds = time.monotonic() - self.started
        self.cpu = tuple(b - a for a, b in zip(self.cpu0, self._cpu()))
        self.last_job = self._last_job()
        self.jobs = self.last_job - self.first_job
        self.driver_peak, self.jvm_peak = _peak_rss(os.getpid()), _peak_rss(self.jvm_pid)

    def line(self, name: str) -> str:
        driver, jvm, workers = self.cpu
        return (f"{name:9} {self.seconds:8.1f} s  {self.jobs:5d} Spark jobs  driver peak {self.driver_peak / 2**30:5.2f}"
                f" GiB  JVM peak {self.jvm_peak / 2**30:5.2f} GiB  CPU s: driver {driver:.0f}, JVM {jvm:.0f},"
                f" Python workers {workers:.0f}")


def _peak_rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 if pid == os.getpid() else 0


def _rest(spark, what: str) -> list[dict]:
    """The Spark UI's REST API answer about this application (``jobs``, ``sql?…``); [] without a UI."""
    import json
    import urllib.request

    ui = spark.sparkContext.uiWebUrl
    if not ui:
        return []
    with urllib.request.urlopen(f"{ui}/api/v1/applications/{spark.sparkContext.applicationId}/{what}") as answer:
        return json.load(answer)


def job_sites(spark, first: int, last: int, top: int) -> list[tuple[int, float, str]]:
    """(jobs, seconds, call site | description) of the jobs after ``first`` up to ``last``, most frequent first, from
    the Spark UI's REST API (numbers in descriptions read N: Delta's name a version or a table)."""
    jobs = [j for j in _rest(spark, "jobs") if first < j["jobId"] <= last]
    sites: dict[str, list[float]] = {}
    for j in jobs:
        took = (_ms(j.get("completionTime")) - _ms(j.get("submissionTime"))) / 1000
        what = re.sub(r"\d+", "N", (j.get("description") or "").splitlines()[0] if j.get("description") else "")[:60]
        sites.setdefault(f"{j['name']}{'  | ' + what if what else ''}", []).append(took)
    return sorted(((len(v), sum(v), k) for k, v in sites.items()), reverse=True)[:top]


def jobs_per_step(spark, first: int, steps) -> dict[str, int]:
    """Spark jobs submitted within each step's window (steps run one at a time in the in-process executor)."""
    submitted = [_ms(j.get("submissionTime")) / 1000 for j in _rest(spark, "jobs") if j["jobId"] > first]
    return {key: sum(start <= t <= end for t in submitted) for key, start, end in steps}


def queries_per_step(spark, steps, top: int) -> list[tuple[str, int, int, float, list[tuple[int, str]]]]:
    """Per step: (step, SQL queries started in its window, their jobs, their seconds summed, its ``top`` call sites by
    query count). A query is one execution of a plan (a collect, a write, a cache fill, Delta's own queries); each
    costs analysis, optimization and planning on the driver before its jobs run."""
    from collections import Counter

    executions = _rest(spark, "sql?details=false&offset=0&length=100000")
    out = []
    for key, start, end in steps:
        mine = [e for e in executions if start <= _ms(e.get("submissionTime")) / 1000 <= end]
        jobs = sum(len(e.get("successJobIds", [])) + len(e.get("failedJobIds", [])) for e in mine)
        sites = Counter(re.sub(r":\d+$", "", (e.get("description") or "?").splitlines()[0])[:110] for e in mine)
        out.append((key, len(mine), jobs, sum(e.get("duration", 0) for e in mine) / 1000,
                    [(n, site) for site, n in sites.most_common(top)]))
    return out


def _ms(stamp: str | None) -> float:
    from datetime import datetime

    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f%Z").timestamp() * 1000 if stamp else 0.0


def run_pipeline(landing: Path, lake: Path, day: str):
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(
        [*all_assets, *checks], partition_key=day, instance=instance, raise_on_error=False,
        resources={"spark": SparkResource(), "lake": LakeResource(root=str(lake)),
                   "landing": LandingResource(path=str(landing)), "reports": ReportsResource(path=str(lake / "reports"))})
    check_steps = {c.node_def.name for c in checks}
    stats = sorted(instance.get_run_step_stats(result.run_id), key=lambda s: s.start_time or 0)
    steps = [(s.step_key, (s.end_time or 0) - (s.start_time or 0), s.step_key in check_steps) for s in stats]
    return result.success, steps, [(s.step_key, s.start_time or 0, s.end_time or 0) for s in stats]


# The floor's own work as the pipeline does it (every landing file read, parsed and quarantined; topics mapped to
# bundles; per-bundle and per-broker tables): the like-for-like part of the ratio. The rest is what the floor does
# not do at all.
FLOOR_LIKE = ("bronze_tables", "silver__topic_bundle", "silver__bundle_stats", "silver__broker_usage")


def by_stage(steps) -> dict[str, float]:
    """Step seconds summed by what they are for."""
    out = {"ingest and the floor's tables": 0.0, "replays, planning and the other tables": 0.0,
           "simulation": 0.0, "checks": 0.0, "report": 0.0}
    for key, took, is_check in steps:
        stage = ("checks" if is_check else "ingest and the floor's tables" if key in FLOOR_LIKE else
                 "simulation" if key in ("simulation", "gold__load_model") else
                 "report" if key.startswith("reports__") else "replays, planning and the other tables")
        out[stage] += took
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="M")
    parser.add_argument("--snapshots", type=int, default=None)
    parser.add_argument("--data", default=str(Path(__file__).parent / ".data"))
    parser.add_argument("--skip-floor", action="store_true")
    parser.add_argument("--sites", type=int, default=0, help="print the N most frequent Spark job call sites")
    parser.add_argument("--queries", type=int, default=0, metavar="N",
                        help="print each step's SQL queries (count, jobs, seconds) and its N most frequent call sites")
    parser.add_argument("--nights", type=int, default=1,
                        help="run the night N times in the JVM, each on a fresh lake (the first pays the JIT)")
    parser.add_argument("--variant", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                        help="after the nights, one more night per variant with these runtime Spark settings "
                             "(A/B in one JVM: compare with the last plain night)")
    args = parser.parse_args()
    base = Path(args.data) / (args.preset + (f"-{args.snapshots}" if args.snapshots else ""))
    landing = base / "landing"
    if not any(iter_snapshot_dirs(landing)):
        t = time.monotonic()
        generate(landing, args.preset, snapshots=args.snapshots)
        print(f"generated {args.preset} in {time.monotonic() - t:.0f} s", file=sys.stderr)
    day = next(iter_snapshot_dirs(landing)).name[:10]
    # the one session both phases share, with the pipeline's settings (and every job kept for --sites)
    spark = SparkResource(conf={"spark.ui.retainedJobs": "100000", "spark.ui.retainedStages": "100000"}).session
    meters = {}
    if not args.skip_floor:
        shutil.rmtree(base / "floor-lake", ignore_errors=True)
        with Meter(spark) as meters["floor"]:
            rows = floor_job(spark, landing, day, base / "floor-lake")
        print(f"floor: {rows}", file=sys.stderr)
    for night in range(args.nights):  # the last night's steps are printed; each night's total too
        shutil.rmtree(base / "lake", ignore_errors=True)  # an empty lake, as on a first night
        name = "pipeline" if night == args.nights - 1 else f"night {night + 1}"
        with Meter(spark) as meters[name]:
            ok, steps, windows = run_pipeline(landing, base / "lake", day)
    for i, variant in enumerate(args.variant, 1):
        pairs = dict(kv.split("=", 1) for kv in variant.split(","))
        before = {k: spark.conf.get(k, None) for k in pairs}
        for k, v in pairs.items():
            spark.conf.set(k, v)
        shutil.rmtree(base / "lake", ignore_errors=True)
        with Meter(spark) as meters[f"{i}: {variant}"[:44]]:
            ok_variant, variant_steps, _ = run_pipeline(landing, base / "lake", day)
        for k, v in before.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
        ok = ok and ok_variant
        for key, took, is_check in variant_steps:
            print(f"  [{i}: {variant[:30]}] {key:50} {took:8.1f} s")
    jobs = jobs_per_step(spark, meters["pipeline"].first_job, windows)
    for key, took, is_check in steps:
        print(f"  {'check' if is_check else 'asset'}  {key:60} {took:8.1f} s {jobs.get(key, 0):5d} jobs")
    checks_time = sum(t for _, t, c in steps if c)
    print(f"\npreset {args.preset}, day {day}, {len(list(iter_snapshot_dirs(landing, day)))} snapshots")
    for name, m in meters.items():
        print(m.line(name))
    total = meters["pipeline"].seconds
    print(f"validation {checks_time:.0f} s ({checks_time / max(total, 1e-9):.0%} of the pipeline)")
    if "floor" in meters:
        print(f"pipeline / floor = {total / meters['floor'].seconds:.1f}")
    for stage, took in by_stage(steps).items():
        share = f", {took / meters['floor'].seconds:.1f}× the floor" if "floor" in meters else ""
        print(f"  {stage:42} {took:7.1f} s ({took / max(total, 1e-9):.0%}{share})")
    plain = meters["pipeline"]  # the last plain night's call sites, not the variants' after it
    for n, took, site in job_sites(spark, plain.first_job, plain.last_job, args.sites) if args.sites else ():
        print(f"  {n:5d} jobs {took:7.1f} s  {site}")
    if args.queries:
        rows = queries_per_step(spark, windows, args.queries)
        print(f"\nSQL queries of the last plain night: {sum(r[1] for r in rows)} "
              f"({sum(r[2] for r in rows)} of their jobs)")
        for key, n, jobs, took, sites in sorted(rows, key=lambda r: -r[1]):
            print(f"  {key:44} {n:4d} queries {jobs:4d} jobs {took:6.1f} s")
            for k, site in sites:
                print(f"      {k:4d}  {site}")
    print("pipeline " + ("succeeded" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
