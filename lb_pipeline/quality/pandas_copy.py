"""A Spark DataFrame as a pandas copy that means what it meant on Spark, for the suites GX validates on pandas
(``runner``): one Arrow transfer; NaN kept a value ordered above every number; integers and naive UTC timestamps
named as Spark names them."""

from __future__ import annotations


class SparkNaN(float):
    """Spark's NaN in a pandas copy: ordered above every number, as Spark orders it, and not a missing value (pandas
    takes a float NaN for one); named NaN."""

    def __new__(cls, *_copied):  # a copy (``type(v)(v)``) is NaN again
        return super().__new__(cls, "inf")

    def __repr__(self):
        return "NaN"

    __str__ = __repr__


def on_the_driver(df):
    """A pandas copy of ``df`` in one Arrow transfer, with Spark's meaning kept: a NaN becomes ``SparkNaN`` (in an
    object column, as the few columns that hold one are), integers of a column with nulls stay integers (``None``
    for the nulls) and timestamps are naive UTC, so failing values and rows are named as Spark names them."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    table = df.toArrow()
    holding_nan = []
    for i, col in enumerate(table.schema):
        if pa.types.is_floating(col.type) and pc.any(pc.is_nan(table.column(i))).as_py():
            holding_nan.append(col.name)
        elif pa.types.is_timestamp(col.type) and col.type.tz:  # as Spark hands them out: UTC (the session's), naive
            naive = pa.timestamp(col.type.unit)
            table = table.set_column(i, pa.field(col.name, naive), table.column(i).cast(naive))
    frame = table.to_pandas(integer_object_nulls=True)
    for name in holding_nan:
        frame[name] = pd.Series([None if v is None else SparkNaN() if v != v else v
                                 for v in table.column(name).to_pylist()], index=frame.index, dtype=object)
    return frame


def as_spark(value):
    """A value of a pandas copy as GX on Spark gives it: NaN for ``SparkNaN``, Python scalars for numpy's, a
    ``datetime`` for a pandas ``Timestamp``."""
    if isinstance(value, SparkNaN):
        return float("nan")
    if isinstance(value, dict):
        return {k: as_spark(v) for k, v in value.items()}
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return value.item()
    to_datetime = getattr(value, "to_pydatetime", None)
    return to_datetime() if to_datetime is not None else value


def plain(value):
    value = as_spark(value)
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
