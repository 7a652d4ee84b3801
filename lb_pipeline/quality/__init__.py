"""Data quality: the row rules, the GX suites and their results.

Great Expectations imports ``pyspark.sql.connect``, whose dependency check calls ``sys.exit(0)`` ("Skipping
doctests: No module named 'google.rpc'") when the process's ``__main__`` has neither a spec nor a file, which it
takes for a doctest run, and Spark Connect's gRPC extras are not installed. The run worker that Dagster's daemon
launches is such a process: every run of the 02:00 schedule and of the landing sensor ended at ``bronze_checks``
with ``SystemExit: 0``. In such a process Spark Connect is marked unavailable before GX looks for it (GX then
leaves it out, as when it is not installed); the pipeline never uses it.
"""

import contextlib
import io
import sys


def _spark_connect_unavailable_where_its_check_would_exit() -> None:
    main = sys.modules.get("__main__")
    if main is not None and getattr(main, "__spec__", None) is None and not hasattr(main, "__file__") \
            and not hasattr(sys, "ps1") and "pyspark.sql.connect" not in sys.modules:
        try:
            with contextlib.redirect_stderr(io.StringIO()):  # its "Skipping doctests" line
                import pyspark.sql.connect  # noqa: F401 - succeeds where the gRPC extras are installed
        except (SystemExit, ImportError):
            sys.modules["pyspark.sql.connect"] = None  # an ImportError for whoever imports it next


_spark_connect_unavailable_where_its_check_would_exit()
