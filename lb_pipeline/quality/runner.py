"""Great Expectations 1.x suites (JSON in ``expectations/``) validated against the tables' Spark DataFrames.

One ephemeral GX context per process (importing GX costs seconds); suites are loaded as plain data
(``gx.ExpectationSuite(**json)``). The summary names each failed expectation's column, severity, how many rows
failed and a few of the offending values, so the asset check can say what is wrong without opening GX.

Where GX runs (``meta.engine`` of a suite): a suite of a table with one row per topic (``"spark"``) runs on Spark,
where GX plans a Spark query per metric; every other table has at most a row per bundle and snapshot, and its
suite runs on a pandas copy of the columns it reads, fetched in one Arrow transfer (``on_the_driver``): a demo
night's checks had planned and compiled about 130 Spark queries for tables of a few hundred rows. The copy keeps
Spark's meaning: a type expectation is judged on the Spark schema, as GX's Spark engine does, and NaN (which
pandas would take for a missing value) is given to GX as +inf, Spark's place for it in every comparison.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from lb_pipeline.quality.pandas_copy import as_spark, on_the_driver, plain

SUITES_DIR = Path(os.environ.get("LB_EXPECTATIONS_DIR", Path(__file__).resolve().parents[2] / "expectations"))


@dataclass(frozen=True)
class Failure:
    expectation: str
    column: str
    severity: str  # critical | warning | info
    unexpected_count: int | None
    unexpected_values: list
    observed: object = None
    rows: list[dict] = field(default_factory=list)  # a few failing rows, by the suite's ``meta.index_columns``
    # the clusters whose rows fail it ([]: none alone, e.g. a key repeated across clusters, or rows of no cluster;
    # None: not known, a table without clusters)
    clusters: list[str] | None = None

    def describe(self) -> str:
        where = f"column {self.column}" if self.column else "table"
        values = f"; e.g. {self.unexpected_values[:5]}" if self.unexpected_values else ""
        count = f"{self.unexpected_count} row(s)" if self.unexpected_count is not None else f"observed {self.observed}"
        rows = "; rows " + " | ".join(", ".join(f"{k}={v}" for k, v in r.items()) for r in self.rows[:3]) if self.rows else ""
        return f"{self.expectation} failed on {where} ({self.severity}): {count}{values}{rows}"


@dataclass
class Summary:
    suite: str
    evaluated: int
    failures: list[Failure] = field(default_factory=list)
    result_json: dict = field(default_factory=dict, repr=False)

    @property
    def success(self) -> bool:
        return not self.failures

    @property
    def critical(self) -> bool:
        return any(f.severity == "critical" for f in self.failures)


def suite_path(name: str) -> Path:
    return SUITES_DIR / f"{name}.json"


def load_suite(name: str) -> dict:
    path = suite_path(name)
    try:
        suite = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"no expectation suite {path}") from None
    if suite.get("name") != name or not isinstance(suite.get("expectations"), list):
        raise ValueError(f"{path}: expected {{'name': '{name}', 'expectations': [...]}}")
    return suite


_local = threading.local()


def _context():
    """This thread's ephemeral GX context and its Spark data source. One per thread, as GX does not say its contexts
    may be shared between threads (``_run`` replaces suites and definitions by name); the first costs the import of
    GX, seconds, each further one milliseconds."""
    if getattr(_local, "gx", None) is None:
        os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        ctx = gx.get_context(mode="ephemeral")
        ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
        _local.gx = ctx, {"spark": ctx.data_sources.add_spark(name="spark"),
                          "pandas": ctx.data_sources.add_pandas(name="pandas")}
    return _local.gx


SPARK_ONLY = "spark"
TYPE_EXPECTATION = "expect_column_values_to_be_of_type"


def engine(suite_doc: dict) -> str:
    """``spark`` for a suite whose table has a row per topic (``meta.engine``), else ``pandas``."""
    return "spark" if (suite_doc.get("meta") or {}).get("engine") == SPARK_ONLY else "pandas"


def type_failures(schema, suite_doc: dict) -> list[Failure]:
    """The suite's type expectations judged on the Spark schema, as GX's Spark engine judges them (``isinstance``
    of the column's type against ``pyspark.sql.types.<type_>``), for a suite validated on a pandas copy."""
    from pyspark.sql import types

    fields = {f.name: f.dataType for f in schema.fields}
    out = []
    for e in suite_doc["expectations"]:
        if e["type"] != TYPE_EXPECTATION:
            continue
        kwargs, severity = e.get("kwargs", {}), e.get("severity", "critical")
        column, wanted = kwargs.get("column"), getattr(types, str(kwargs.get("type_")), None)
        actual = fields.get(column)
        if actual is None or wanted is None:
            what = f"column {column} missing" if actual is None else f"unknown Spark type {kwargs.get('type_')}"
            out.append(Failure(e["type"], column or "", "critical", None, [], f"error: {what}"))
        elif not isinstance(actual, wanted):
            out.append(Failure(e["type"], column, severity, None, [], type(actual).__name__))
    return out


def suite_columns(name: str) -> set[str]:
    """Every column suite ``name`` reads: its expectations' columns and the index columns that name failing rows."""
    suite = load_suite(name)
    columns = set((suite.get("meta") or {}).get("index_columns", []))
    for e in suite["expectations"]:
        columns.update(expectation_columns(e.get("kwargs", {})))
    return columns


def only_what_the_suite_reads(df, name: str):
    """``df`` without the columns suite ``name`` never reads (a view is cached for GX's passes: a day of topic
    stats caches a tenth the size without its long ``source_file`` text). A column the suite names but the table
    lacks is left for GX to report missing."""
    needed = suite_columns(name)
    return df.select(*[c for c in df.columns if c in needed])


def expectation_columns(kwargs: dict) -> list[str]:
    """The column(s) an expectation is about."""
    return [kwargs["column"]] if kwargs.get("column") else list(kwargs.get("column_list") or kwargs.get("column_set") or [])


def expectation_column(kwargs: dict) -> str:
    """The column(s) an expectation is about, as the results and messages name them."""
    return ",".join(expectation_columns(kwargs))


def _run(df, name: str, suite_doc: dict, result_format):
    """One GX validation of ``df`` (Spark or pandas) against ``suite_doc`` (registered under ``name`` in the
    ephemeral context)."""
    import great_expectations as gx

    ctx, sources = _context()
    source = sources["spark" if hasattr(df, "sparkSession") else "pandas"]
    try:
        batch_def = source.get_asset(name).get_batch_definition("all")
    except (LookupError, KeyError, ValueError):
        batch_def = source.add_dataframe_asset(name=name).add_batch_definition_whole_dataframe("all")
    for store in (ctx.validation_definitions, ctx.suites):
        try:
            store.delete(name)
        except Exception:  # noqa: BLE001 - absent on first use
            pass
    suite = ctx.suites.add(gx.ExpectationSuite(**{**suite_doc, "name": name}))
    vd = ctx.validation_definitions.add(gx.ValidationDefinition(name=name, data=batch_def, suite=suite))
    return vd.run(batch_parameters={"dataframe": df}, result_format=result_format)


def _key(expectation_type: str, kwargs: dict) -> tuple[str, str]:
    """An expectation's identity within a suite: its type and column(s) (suites never repeat a pair)."""
    return expectation_type, expectation_column(kwargs)


def validate(df, name: str) -> Summary:
    """Validate the Spark DataFrame ``df`` with suite ``expectations/<name>.json`` (on Spark or on a pandas copy,
    as the suite's ``meta.engine`` says).

    Two passes keep GX cheap: the whole suite with ``BOOLEAN_ONLY`` (GX bundles the unexpected counts of a table
    into few aggregations), then, only if something failed, the failed expectations again with ``SUMMARY``
    for counts, offending values and rows. A clean night pays for the first pass only (about half the cost)."""
    suite_doc = load_suite(name)
    order = {_key(e["type"], e.get("kwargs", {})): i for i, e in enumerate(suite_doc["expectations"])}
    typed: list[Failure] = []
    if engine(suite_doc) == "pandas":
        typed = type_failures(df.schema, suite_doc)
        judged = len([e for e in suite_doc["expectations"] if e["type"] == TYPE_EXPECTATION])
        suite_doc = {**suite_doc, "expectations": [e for e in suite_doc["expectations"] if e["type"] != TYPE_EXPECTATION]}
        df = on_the_driver(df)
    else:
        judged = 0
    first = _run(df, name, suite_doc, "BOOLEAN_ONLY")
    evaluated = len(first.results) + judged
    failed = {_key(r.expectation_config.type, r.expectation_config.kwargs) for r in first.results if not r.success}
    if not failed:
        return Summary(name, evaluated, typed, first.to_json_dict())
    # index columns make GX return the identifying columns of a few failing rows (what a derived True/False
    # property column cannot say by itself: which bundle, which broker, which snapshot)
    index = [c for c in (suite_doc.get("meta") or {}).get("index_columns", []) if c in df.columns]
    result_format = {"result_format": "SUMMARY", "partial_unexpected_count": 10}
    if index:
        result_format["unexpected_index_column_names"] = index
    retry = {**suite_doc, "expectations": [e for e in suite_doc["expectations"]
                                           if _key(e["type"], e.get("kwargs", {})) in failed] or suite_doc["expectations"]}
    result = _run(df, f"{name}.failed", retry, result_format)
    failures = list(typed)
    for r in result.results:
        if r.success:  # cannot pass on the same data; kept for safety (GX can differ across formats)
            continue
        cfg = r.expectation_config
        column = expectation_column(cfg.kwargs)
        res = r.result or {}
        values = res.get("partial_unexpected_list") or []
        missing = ((res.get("details") or {}).get("mismatched") or {}).get("missing")
        if missing:  # expect_table_columns_to_match_set: name the columns that are not there
            values = [f"missing column {c}" for c in missing]
        rows = [{k: plain(v) for k, v in row.items()} for row in res.get("partial_unexpected_index_list") or []
                if isinstance(row, dict)]
        if r.exception_info and r.exception_info.get("raised_exception"):
            failures.append(Failure(cfg.type, column, "critical", None, [],
                                    f"error: {str(r.exception_info.get('exception_message'))[:200]}"))
        else:
            failures.append(Failure(cfg.type, column, getattr(cfg.severity, "value", str(cfg.severity)),
                                    res.get("unexpected_count"), [str(v) if isinstance(v, dict) else v
                                                               for v in map(as_spark, values)],
                                    res.get("observed_value"), rows))
    failures.sort(key=lambda f: order.get((f.expectation, f.column), len(order)))  # in the suite's order
    return Summary(name, evaluated, _of_clusters(df, name, retry, failures), result.to_json_dict())


def _of_clusters(df, name: str, suite_doc: dict, failures: list[Failure]) -> list[Failure]:
    """Each failure with the clusters whose rows fail it, so that each cluster's report shows its own: one cluster
    in the table names it; several are each validated again on the failed expectations alone (a night with failures
    and several clusters pays one more pass a cluster)."""
    if "cluster" not in df.columns:
        return failures
    spark = hasattr(df, "sparkSession")
    clusters = sorted(r[0] for r in df.select("cluster").distinct().collect() if r[0] is not None) if spark \
        else sorted(c for c in df["cluster"].dropna().unique())
    if len(clusters) <= 1:
        return [replace(f, clusters=list(clusters)) for f in failures]
    failing: dict[tuple[str, str], list[str]] = {}
    for i, cluster in enumerate(clusters):
        part = df.where(df["cluster"] == cluster) if spark else df[df["cluster"] == cluster]
        for r in _run(part, f"{name}.cluster{i}", suite_doc, "BOOLEAN_ONLY").results:
            if not r.success:
                failing.setdefault(_key(r.expectation_config.type, r.expectation_config.kwargs), []).append(cluster)
    return [replace(f, clusters=failing.get((f.expectation, f.column), [])) for f in failures]


def validate_all(views: Iterable[tuple[str, Callable[[], object]]], threads: int = 4,
                 done: Callable[[str, Summary], None] = lambda _name, _summary: None) -> dict[str, Summary]:
    """Validate each (suite, view) pair, ``threads`` suites at a time, each view cached with only the columns its
    suite reads while GX makes its passes over it. Most suites cost fixed time (GX's planning, a Delta snapshot,
    a Spark job per metric domain on one or two tasks) that left a core idle one suite at a time: on M, warm, the
    bronze suites took 20.3 s one at a time, 16.7 s two, 15.0 s four; gold 12.6, 10.7, 8.3 s (silver, two large
    suites, 15.1 s one at a time and about 13 s two or four at a time), all on Spark then. ``done`` hears of each
    suite as it finishes.
    A suite that raises stops no other; the first such error is raised once all are done."""
    from concurrent.futures import ThreadPoolExecutor

    def one(item):
        name, view = item
        df = only_what_the_suite_reads(view(), name)
        on_spark = engine(load_suite(name)) == "spark"
        if on_spark:  # cached for GX's queries; a pandas copy is read once
            df = df.persist()
        try:
            summary = validate(df, name)
        finally:
            if on_spark:
                df.unpersist()
        done(name, summary)
        return name, summary

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gx") as pool:
        return dict(pool.map(one, list(views)))
