"""Each bundle's arrivals on a new owner in ``bronze/report_writes`` (``simulation.arrivals.first_listings`` on
Spark): the writes that list a bundle under another broker than the write before that listed it, and whether its
broker before wrote a report without it in between (the leader then dropped its averages and starts them again from
this report). A few rows a move, for the closed loop's validation (``simulation.real_validation.score``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from lb_pipeline.simulation.history import TRAFFIC

KEYS = ["cluster", "bundle", "write_ms", "zxid"]


def arrivals(report_writes: DataFrame) -> DataFrame:
    """Rows of ``cluster, snapshot_date, bundle, broker, write_ms, zxid, <TRAFFIC>, restarted``."""
    order = Window.partitionBy("cluster", "bundle").orderBy("write_ms", "zxid")
    listed = report_writes.where(F.col("bundle").isNotNull()).select(
        "cluster", "snapshot_date", "bundle", "broker", "write_ms", "zxid", *TRAFFIC,
        F.lag("broker").over(order).alias("before"), F.lag("write_ms").over(order).alias("since"))
    moved = listed.where(F.col("before").isNotNull() & (F.col("before") != F.col("broker")))
    written = report_writes.select("cluster", F.col("broker").alias("before"), F.col("write_ms").alias("t")).distinct()
    dropped = (moved.join(written, ["cluster", "before"])
               .where((F.col("t") > F.col("since")) & (F.col("t") < F.col("write_ms")))
               .select(*KEYS).distinct().withColumn("restarted", F.lit(True)))
    return (moved.join(dropped, KEYS, "left")
            .select("cluster", "snapshot_date", "bundle", "broker", "write_ms", "zxid", *TRAFFIC,
                    F.coalesce("restarted", F.lit(False)).alias("restarted")))
