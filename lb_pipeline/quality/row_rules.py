"""A bronze table's critical row-level expectations applied at ingest: rows that would fail them go to the
quarantine (file, column, reason) instead of failing the table's blocking check.

One hostile value (``cpu.usage = -500``, ``1.0E308``, ``formatVersion: 99``) or one topic reported by two brokers
used to fail a blocking bronze check and skip silver, gold and the report of the whole day, every cluster's
clean rows included. The suites stay the single source of the rules: ``expect_column_values_to_not_be_null``,
``…_to_be_between``, ``…_to_be_in_set`` and ``expect_compound_columns_to_be_unique`` (every row of a repeated key
goes: which one is right cannot be told) with severity critical, evaluated on the table's validation view
(``views.SUITES``), exactly as GX will. Column sets and types remain the checks' job: only a bug breaks those.

``check_rows`` evaluates the same rules on parsed rows in plain Python, for ``validate-snapshot`` (no Spark):
the few view columns the rules read are derived again in ``_DERIVED``; a test holds the two to the same answers.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache

from lb_pipeline.formats.events import logged_by_snapshot
from lb_pipeline.formats.report_writes import written_by_snapshot
from lb_pipeline.quality.runner import load_suite

UNIQUE = "expect_compound_columns_to_be_unique"
ROW_RULES = ("expect_column_values_to_not_be_null", "expect_column_values_to_be_between",
             "expect_column_values_to_be_in_set", UNIQUE)
_SNAPSHOT_KEY = ("cluster", "snapshot_ts", "snapshot_date")
# Below this a resource limit Pulsar divides by in float32 (``ResourceUsage.percentUsage``) turns any usage into an
# infinite (or NaN) percentage: 1e-300 rounds to 0.0f; no real limit (percent of a core, MB, kbit/s) is that small.
SMALLEST_LIMIT = 1e-6
LIMITS = ("cpu_limit", "memory_limit", "direct_memory_limit", "bandwidth_in_limit", "bandwidth_out_limit")


@lru_cache(maxsize=None)
def rules(table: str) -> tuple[dict, ...]:
    """The critical row rules of ``expectations/bronze.<table>.json``."""
    try:
        suite = load_suite(f"bronze.{table}")
    except FileNotFoundError:
        return ()
    return tuple(e for e in suite["expectations"] if e["type"] in ROW_RULES and e.get("severity") == "critical")


def columns(expectation: dict) -> list[str]:
    kw = expectation["kwargs"]
    return list(kw["column_list"]) if expectation["type"] == UNIQUE else [kw["column"]]


def field_of(expectation: dict) -> str:
    """The quarantine's field: the column, or a key's own columns (not the snapshot's)."""
    return ",".join(c for c in columns(expectation) if c not in _SNAPSHOT_KEY) or "(row)"


def describe(expectation: dict) -> str:
    kw = expectation["kwargs"]
    if expectation["type"] == UNIQUE:
        return f"expected one row per ({', '.join(kw['column_list'])})"
    if expectation["type"].endswith("not_be_null"):
        return "expected a value"
    if kw.get("value_set") == [True] and (why := expectation.get("meta", {}).get("why")):  # a derived check
        return f"expected {kw['column']}: {why}"
    if expectation["type"].endswith("between"):
        return f"expected a value between {kw.get('min_value')} and {kw.get('max_value')}"
    return f"expected one of {kw['value_set']}"


def _reason(table: str, expectation: dict, value) -> str:
    value = str(value).lower() if isinstance(value, bool) else value  # as Spark casts it to a string
    return f"{describe(expectation)}, got {value} (expectations/bronze.{table}.json)"


# The view columns of views.SUITES the row rules read, for one row in Python.
def _positions(r):
    return [int(b, 16) for b in r["boundaries"] or []]


_DERIVED = {
    "in_partition_day": lambda r: r["snapshot_ts"].strftime("%Y-%m-%d") == r["snapshot_date"],
    "live_broker_count": lambda r: len(r["brokers"] or []),
    "boundaries_cover_ring": lambda r: bool(r["boundaries"]) and _positions(r)[0] == 0 and _positions(r)[-1] == 0xFFFFFFFF,
    "boundaries_increasing": lambda r: all(b > a for a, b in zip(_positions(r), _positions(r)[1:])),
    "bundle_count_matches": lambda r: len(r["boundaries"] or []) == (r["num_bundles"] or 0) + 1,
    "limits_usable": lambda r: all(r[c] is None or r[c] <= 0 or r[c] >= SMALLEST_LIMIT for c in LIMITS),
    "written_by_snapshot": lambda r: written_by_snapshot(r["write_ms"], int(r["snapshot_ts"].timestamp() * 1000)),
    "logged_by_snapshot": lambda r: logged_by_snapshot(int(r["event_ts"].timestamp() * 1000),
                                                       int(r["snapshot_ts"].timestamp() * 1000)),
}


def check_rows(table: str, rows: list[dict]) -> tuple[list[dict], list[tuple[dict, str, str]]]:
    """(rows that pass, (row, field, reason) for those that do not), as ``split`` decides on the same rows."""
    checked = [e for e in rules(table) if all(c in rows[0] or c in _DERIVED for c in columns(e))] if rows else []
    counts = {}
    for e in checked:
        if e["type"] == UNIQUE:
            counts[id(e)] = Counter(tuple(_value(r, c) for c in columns(e)) for r in rows)  # linear in the rows
    kept, rejected = [], []
    for r in rows:
        broken = next((b for e in checked if (b := _broken(table, e, r, counts.get(id(e))))), None)
        if broken:
            rejected.append((r, *broken))
        else:
            kept.append(r)
    return kept, rejected


def _value(row: dict, column: str):
    return row[column] if column in row else _DERIVED[column](row)


def _broken(table: str, e: dict, row: dict, counts) -> tuple[str, str] | None:
    if e["type"] == UNIQUE:
        n = counts[tuple(_value(row, c) for c in columns(e))]
        return (field_of(e), f"{describe(e)}, got {n} (expectations/bronze.{table}.json)") if n > 1 else None
    kw, value = e["kwargs"], _value(row, e["kwargs"]["column"])
    if e["type"].endswith("not_be_null"):
        bad = value is None
    elif value is None:  # GX lets nulls pass between and in_set
        bad = False
    elif e["type"].endswith("between"):
        low, high = kw.get("min_value"), kw.get("max_value")
        bad = math.isnan(value) or (low is not None and value < low) or (high is not None and value > high)
    else:
        bad = value not in kw["value_set"]
    return (field_of(e), _reason(table, e, value)) if bad else None


def split(table: str, rows):
    """(rows that pass, quarantine rows for those that do not) of bronze ``table``; the quarantine rows carry the
    first failing column, the rule, the value, and the row as JSON."""
    from pyspark.sql import functions as F

    marked = mark(table, rows)
    return (marked.where(F.col("_rule").isNull()).select(*rows.columns),
            rejected(marked.where(F.col("_rule").isNotNull()), table, rows.columns))


def count_column(k: int) -> str:
    return f"_count{k}"


def mark(table: str, rows, eligible=None):
    """``rows`` with ``_rule``: the position in ``rules(table)`` of the first critical rule the row breaks (null
    where none), and ``_count<k>``, the rows of its key, for each uniqueness rule ``k``. Only rows where the Column
    ``eligible`` holds are checked (all when None), and a key's uniqueness is counted among them: ingest marks its
    parsed rows once, good and quarantined alike, so that the windows of the uniqueness rules run once per table.

    Only the rule's number is computed for every row; ``rejected`` spells out field and reason for the few rows
    that break one (both for every row, each rule tested again for the reason, had made the generated code too
    large for the JVM to compile: 2.4 million topic rows took twice as long)."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    from lb_pipeline.quality import views

    suite = f"bronze.{table}"
    checked = []
    if suite in views.SUITES:
        viewed = views.SUITES[suite][1](lambda layer, name: rows)
        checked = [(k, e) for k, e in enumerate(rules(table)) if all(c in viewed.columns for c in columns(e))]
    if not checked:
        return rows.withColumn("_rule", F.lit(None).cast("int"))
    # one window column per uniqueness rule, the eligibility a column: as an expression in each use, every use
    # had its own shuffle and sort of all the rows
    viewed = viewed.withColumn("_eligible", F.lit(True) if eligible is None else eligible)
    viewed = viewed.select("*", *[F.count(F.lit(1)).over(Window.partitionBy(*e["kwargs"]["column_list"], "_eligible"))
                                  .alias(count_column(k)) for k, e in checked if e["type"] == UNIQUE])
    first = _first("INT", [f"CASE WHEN `_eligible` AND {_violates(k, e)} THEN {k} END" for k, e in checked])
    return viewed.withColumn("_rule", first).drop("_eligible")


def first_rule(table: str, columns_present, skip: int | None = None):
    """The Column ``mark`` computes as ``_rule`` (the first critical rule a row breaks), on a frame with these
    columns, leaving out rule ``skip``."""
    checked = [(k, e) for k, e in enumerate(rules(table)) if k != skip
               and (count_column(k) if e["type"] == UNIQUE else e["kwargs"]["column"]) in columns_present]
    return _first("INT", [f"CASE WHEN {_violates(k, e)} THEN {k} END" for k, e in checked])


# The rules' Columns are written as SQL text, one ``F.expr`` each: built from ``F`` functions, every rule cost a
# dozen calls into the JVM, 12,600 of them an ingest of four demo snapshots, a third of its time.
def _first(sql_type: str, cases: list[str]):
    """The Column of the first non-null of ``cases`` (SQL), null of ``sql_type`` when none holds."""
    from pyspark.sql import functions as F

    return F.expr(f"coalesce({', '.join([f'CAST(NULL AS {sql_type})', *cases])})")


def sql_name(column: str) -> str:
    return "`" + column.replace("`", "``") + "`"


def _literal(value) -> str:
    """``value`` as a SQL literal of the type ``F.lit`` gives it (int or bigint by size, double, string, boolean)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return repr(value) + "D"
        return f"CAST('{'NaN' if math.isnan(value) else '-Infinity' if value < 0 else 'Infinity'}' AS DOUBLE)"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    raise TypeError(f"no SQL literal for {value!r} ({type(value).__name__}) in a row rule")


def _violates(k: int, e: dict) -> str:
    """SQL: the row breaks rule ``k`` (null where it cannot tell, as Spark's own comparisons are)."""
    kind, kw = e["type"], e["kwargs"]
    if kind == UNIQUE:
        return f"({sql_name(count_column(k))} > 1)"
    col = sql_name(kw["column"])
    if kind.endswith("not_be_null"):
        return f"({col} IS NULL)"
    if kind.endswith("between"):
        low, high = kw.get("min_value"), kw.get("max_value")
        bad = [f"isnan(CAST({col} AS DOUBLE))"]
        bad += [f"{col} < {_literal(low)}"] if low is not None else []
        bad += [f"{col} > {_literal(high)}"] if high is not None else []
        return f"({col} IS NOT NULL AND ({' OR '.join(bad)}))"
    values = kw["value_set"]
    inside = f"{col} IN ({', '.join(map(_literal, values))})" if values else "false"
    return f"({col} IS NOT NULL AND NOT ({inside}))"


def rejected(marked, table: str, table_columns: list[str]):
    """Quarantine rows for the marked rows that break a rule (``mark``): the rule's field, the reason with the
    value that broke it, the row itself as JSON."""
    from pyspark.sql import functions as F

    suite = f"bronze.{table}"
    # the rules ``mark`` checked: those whose column (a key's count for a uniqueness rule) the rows have
    checked = [(k, e) for k, e in enumerate(rules(table))
               if (count_column(k) if e["type"] == UNIQUE else e["kwargs"]["column"]) in marked.columns]

    def got(k, e):
        if e["type"] == UNIQUE:
            return f"CAST({sql_name(count_column(k))} AS STRING)"
        return f"coalesce(CAST({sql_name(e['kwargs']['column'])} AS STRING), 'None')"

    field = _first("STRING", [f"CASE WHEN `_rule` = {k} THEN {_literal(field_of(e))} END" for k, e in checked])
    reason = _first("STRING", [f"CASE WHEN `_rule` = {k} THEN concat({_literal(describe(e) + ', got ')}, {got(k, e)}, "
                               f"{_literal(f' (expectations/{suite}.json)')}) END" for k, e in checked])
    return marked.select(
        "cluster", "snapshot_ts", "snapshot_date", "source_file", F.lit(table).alias("bronze_table"),
        field.alias("field"), reason.alias("reason"),
        F.to_json(F.struct(*table_columns)).alias("raw"), F.lit(False).alias("raw_truncated"))
