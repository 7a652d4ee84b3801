"""A topic whose bundle moved while the collector read the brokers one after the other is in two brokers' topic
stats of one snapshot: the old owner answered before the unload, the new one after it. Both rows are real
readings, but the snapshot is one moment: the copy kept is the one from the broker the snapshot's ownership
maps give the bundle to, and the other copy is left out (not quarantined: nothing is wrong with the data).

Only where exactly one of the brokers that reported the topic owns its bundle; otherwise (no owner, or the
ownership maps disagree too) which copy is right cannot be told, and the uniqueness rule quarantines every copy
as before. Python (``left_out``, for ``validate-snapshot``) and Spark (``resolve``, for ingest) decide alike.
"""

from __future__ import annotations

from lb_pipeline.quality import row_rules

TABLE = "topic_stats"
_KEY = ("cluster", "snapshot_ts", "topic")
_OWNED = ("cluster", "snapshot_ts", "broker", "bundle")
LEFT_OUT = -1  # the ``_rule`` of a copy left out: neither a good row nor a quarantined one


def left_out(topic_rows: list[dict], ownership_rows: list[dict]) -> set[int]:
    """Indexes in ``topic_rows`` of the copies to leave out, given the ownership rows ingest keeps."""
    owned = {tuple(r[c] for c in _OWNED) for r in ownership_rows}
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(topic_rows):
        groups.setdefault(tuple(r[c] for c in _KEY), []).append(i)
    out = set()
    for members in groups.values():
        if len(members) > 1:
            owners = [i for i in members if tuple(topic_rows[i][c] for c in _OWNED) in owned]
            if len(owners) == 1:
                out |= set(members) - set(owners)
    return out


def resolve(marked, ownership):
    """``marked`` topic rows (``row_rules.mark``) with the moved topics' extra copies marked ``LEFT_OUT`` and the
    owner's copy checked again without the uniqueness rule. ``ownership``: the ownership rows ingest keeps. Only
    the rows of a repeated key (a handful) meet the join."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    unique = next((k for k, e in enumerate(row_rules.rules(TABLE)) if e["type"] == row_rules.UNIQUE
                   and tuple(e["kwargs"]["column_list"]) == _KEY), None)
    count = row_rules.count_column(unique) if unique is not None else None
    if count is None or count not in marked.columns:
        return marked
    repeated = F.coalesce(F.col(count) > 1, F.lit(False))
    owned = ownership.select(*_OWNED).distinct().withColumn("_owned", F.lit(True))
    copies = (marked.where(repeated & F.col("_reason").isNull()).join(owned, list(_OWNED), "left")
              .withColumn("_owned", F.coalesce("_owned", F.lit(False))))
    copies = copies.withColumn("_owners", F.sum(F.col("_owned").cast("int")).over(Window.partitionBy(*_KEY)))
    again = row_rules.first_rule(TABLE, marked.columns, skip=unique)
    rule = (F.when(F.col("_owners") != 1, F.col("_rule"))
             .when(F.col("_owned"), again)
             .otherwise(F.lit(LEFT_OUT)))
    copies = copies.withColumn("_rule", rule).select(*marked.columns)
    return marked.where(~(repeated & F.col("_reason").isNull())).unionByName(copies)
