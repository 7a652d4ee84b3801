"""A night resumed where it stopped (``lb_pipeline.spark.steps``): a step whose record from an earlier run of the day
still holds is not computed again; what it materialized (or what its checks found) is reported again, with the
metadata of the run that computed it and that run's id."""

import functools

import dagster as dg

from lb_pipeline.spark.steps import RECOMPUTE_TAG, Steps

_KINDS = {"IntMetadataValue": dg.MetadataValue.int, "FloatMetadataValue": dg.MetadataValue.float,
          "TextMetadataValue": dg.MetadataValue.text, "JsonMetadataValue": dg.MetadataValue.json,
          "MarkdownMetadataValue": dg.MetadataValue.md, "PathMetadataValue": dg.MetadataValue.path,
          "UrlMetadataValue": dg.MetadataValue.url, "BoolMetadataValue": dg.MetadataValue.bool}


def _kept(result, key: dg.AssetKey | None) -> dict:
    """A MaterializeResult or an AssetCheckResult as the record keeps it (metadata of the kinds above)."""
    kept = {"asset": (result.asset_key or key).to_user_string(),
            "metadata": {name: [type(v).__name__, v.value] for name, v in (result.metadata or {}).items()
                         if isinstance(v, dg.MetadataValue) and type(v).__name__ in _KINDS}}
    if isinstance(result, dg.AssetCheckResult):
        kept.update(check=result.check_name, passed=result.passed, severity=result.severity.value,
                    description=result.description)
    return kept


def _again(kept: dict, run_id: str):
    asset, meta = dg.AssetKey.from_user_string(kept["asset"]), {
        **{name: _KINDS[kind](value) for name, (kind, value) in kept["metadata"].items()},
        "resumed_from_run": dg.MetadataValue.text(run_id)}
    if "check" in kept:
        return dg.AssetCheckResult(asset_key=asset, check_name=kept["check"], passed=kept["passed"], metadata=meta,
                                   severity=dg.AssetCheckSeverity(kept["severity"]), description=kept["description"])
    return dg.MaterializeResult(asset_key=asset, metadata=meta)


def resumed(context, spark, lake, compute, extra=None, resumable=True, step=None, day=None, config=None,
            shared=()):
    """The results of ``compute()`` (a MaterializeResult, or an iterator of them or of AssetCheckResults), or, when
    the step's record from an earlier run of the day still holds, that run's, without computing. ``extra``: what
    else the step's result depends on; ``shared``: outputs other steps write slices of (``Steps.unchanged``); ``step``,
    ``day`` and ``config`` for a step that is not an asset's (the checks')."""
    ops = context.op_execution_context
    if step is None:  # an asset's step: its op, its partition
        step, day = ops.op_def.name, context.partition_key
    if day is None:  # not a night's run (a check materialized on its own): nothing to resume from or for
        out = compute()
        yield from [out] if isinstance(out, dg.MaterializeResult) else out
        return
    steps = Steps(spark.session, lake.lake, day)
    given = steps.given(step, ops.op_config if config is None else config, extra)
    fresh = not resumable or context.run.tags.get(RECOMPUTE_TAG) == "true"
    record = None if fresh else steps.unchanged(step, given, shared)
    if record is not None:
        try:
            again = [_again(kept, record.run_id) for kept in record.results]
        except Exception as exc:  # noqa: BLE001 - a record this code cannot read back: the step runs instead
            context.log.warning(f"{step}: its record from run {record.run_id} cannot be reported again "
                                f"({type(exc).__name__}: {exc}): computed again")
        else:
            context.log.info(f"{step}: not computed again: its tables are as run {record.run_id} wrote them, from "
                             "the same inputs, code and settings")
            yield from again
            return
    with steps.watching() as seen:
        out = compute()
        results = [out] if isinstance(out, dg.MaterializeResult) else list(out)
    key = next(iter(context.assets_def.keys)) if hasattr(context, "assets_def") else None
    steps.save(step, given, context.run.run_id, seen, [_kept(r, key) for r in results])
    yield from results


def resumable(fn):
    """``resumed`` around an asset's body (``spark`` and ``lake`` among its resources)."""
    @functools.wraps(fn)
    def step(context, **kwargs):
        yield from resumed(context, kwargs["spark"], kwargs["lake"], lambda: fn(context, **kwargs))

    return step
