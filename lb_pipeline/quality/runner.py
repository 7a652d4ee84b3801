"""Great Expectations 1.x suites (JSON in ``expectations/``) validated against Spark DataFrames.

One ephemeral GX context per process (importing GX costs seconds); suites are loaded as plain data
(``gx.ExpectationSuite(**json)``). The summary names each failed expectation's column, severity, how many rows
failed and a few of the offending values, so the asset check can say what is wrong without opening GX.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

SUITES_DIR = Path(os.environ.get("LB_EXPECTATIONS_DIR", Path(__file__).resolve().parents[2] / "expectations"))


@dataclass(frozen=True)
class Failure:
    expectation: str
    column: str
    severity: str  # critical | warning | info
    unexpected_count: int | None
    unexpected_values: list
    observed: object = None

    def describe(self) -> str:
        where = f"column {self.column}" if self.column else "table"
        values = f"; e.g. {self.unexpected_values[:5]}" if self.unexpected_values else ""
        count = f"{self.unexpected_count} row(s)" if self.unexpected_count is not None else f"observed {self.observed}"
        return f"{self.expectation} failed on {where} ({self.severity}): {count}{values}"


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


@lru_cache(maxsize=1)
def _context():
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    return ctx, ctx.data_sources.add_spark(name="spark")


def validate(df, name: str) -> Summary:
    """Validate ``df`` with suite ``expectations/<name>.json``."""
    import great_expectations as gx

    ctx, source = _context()
    suite_doc = load_suite(name)
    try:
        batch_def = source.get_asset(name).get_batch_definition("all")
    except (LookupError, KeyError, ValueError):
        batch_def = source.add_dataframe_asset(name=name).add_batch_definition_whole_dataframe("all")
    try:
        ctx.suites.delete(name)
    except Exception:  # noqa: BLE001 - absent on first use
        pass
    suite = ctx.suites.add(gx.ExpectationSuite(**suite_doc))
    try:
        ctx.validation_definitions.delete(name)
    except Exception:  # noqa: BLE001
        pass
    vd = ctx.validation_definitions.add(gx.ValidationDefinition(name=name, data=batch_def, suite=suite))
    result = vd.run(batch_parameters={"dataframe": df}, result_format="SUMMARY")
    failures = []
    for r in result.results:
        if r.success:
            continue
        cfg = r.expectation_config
        kwargs = cfg.kwargs
        column = kwargs.get("column") or ",".join(kwargs.get("column_list") or [])
        res = r.result or {}
        values = res.get("partial_unexpected_list") or []
        failures.append(Failure(cfg.type, column, getattr(cfg.severity, "value", str(cfg.severity)),
                                res.get("unexpected_count"), [v if not isinstance(v, dict) else str(v) for v in values],
                                res.get("observed_value")))
        if r.exception_info and r.exception_info.get("raised_exception"):
            failures[-1] = Failure(cfg.type, column, "critical", None, [],
                                   f"error: {str(r.exception_info.get('exception_message'))[:200]}")
    return Summary(name, len(result.results), failures, result.to_json_dict())
