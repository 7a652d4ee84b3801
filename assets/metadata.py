"""Metadata helpers shared by the asset modules: row counts, Delta path and version, a small preview."""

from __future__ import annotations

import dagster as dg


def table_metadata(result, preview_df=None, rows: int = 5) -> dict:
    meta = {
        "dagster/row_count": dg.MetadataValue.int(result.rows),
        "path": dg.MetadataValue.path(result.path),
        "delta_version": dg.MetadataValue.int(result.version),
    }
    if preview_df is not None and result.rows:
        pdf = preview_df.limit(rows).toPandas()
        meta["preview"] = dg.MetadataValue.md(pdf.to_markdown(index=False))
    return meta
