"""The one SparkSession builder of lb_pipeline, with Delta Lake configured.

Static settings (jars, SQL extensions, catalog) only take effect in the first session of a process, so every
entry point (CLI, Dagster resource, tests) goes through :func:`get_session`.

Where Delta's jars come from, in order of precedence:

1. ``delta_jars_dir`` (``LB_DELTA_JARS_DIR``): a folder of jars put on the classpath with ``spark.jars``;
   no resolution at all (air-gapped machines).
2. otherwise ``configure_spark_with_delta_pip`` names the Maven coordinates that match the installed
   delta-spark and Spark (``io.delta:delta-spark_4.2_2.13:4.4.1``); Spark's Ivy resolves them from Maven
   Central at first start (or from the mirror in ``ivy_settings`` / ``LB_IVY_SETTINGS``) and caches them in
   ``ivy_dir`` for later runs. Without a mirror, the resolution reads Maven Central only (``CENTRAL_ONLY``), not
   Spark's default chain, which tries the local Maven repository first: a ``~/.m2`` that holds a module's POM
   without its jar (Maven often leaves one) fails every start with "download failed", although Central has it.
"""

from __future__ import annotations

import fcntl
import glob
import os
import sys
import threading
from contextlib import contextmanager

from lb_pipeline.errors import SetupError
from lb_pipeline.settings import SparkSettings, spark_settings_from_env
from lb_pipeline.spark.java import require_java

_LOCK = threading.Lock()
CENTRAL_ONLY = """<ivysettings>
  <!-- written by lb_pipeline: Delta's jars from Maven Central only (not ~/.m2, whose POMs without jars fail Ivy) -->
  <settings defaultResolver="central"/>
  <resolvers>
    <ibiblio name="central" m2compatible="true" root="https://repo1.maven.org/maven2/"/>
  </resolvers>
</ivysettings>
"""


def central_only_settings(ivy_dir: str) -> str:
    """The Ivy settings file (in ``ivy_dir``) that resolves from Maven Central alone; written when absent or changed."""
    path = os.path.join(ivy_dir, "lb-ivysettings.xml")
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == CENTRAL_ONLY:
                return path
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(CENTRAL_ONLY)
    os.replace(tmp, path)
    return path


CODEGEN_CACHE_ENTRIES = 10_000
DEBUGGING = "spark.python.sql.dataFrameDebugging.enabled"
# Options every JVM of a run starts with (the driver's, and the executors' on a cluster): the machine code the JIT
# compiled is kept for the JVM's life. Java 17 flushes code it deems cold: on a night's JVM its sweeper and the
# compiling again of what it flushed took 20 % of the JVM's CPU (a warm demo night's JVM 105 -> 84 CPU-s, the night
# 67.5 -> 55.9 s; docs/benchmarks.md). Nothing flushed, the code cache is twice Java's 240 MB: a full one would stop
# the JIT for the rest of the run. Options given in LB_SPARK_CONF come after these, so they win.
JVM_OPTIONS = "-XX:-UseCodeCacheFlushing -XX:ReservedCodeCacheSize=480m"
JVM_OPTION_KEYS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")


def java_options(conf: dict[str, str]) -> dict[str, str]:
    """The JVMs' options: ``JVM_OPTIONS``, then those ``conf`` gives."""
    return {key: f"{JVM_OPTIONS} {conf.get(key, '')}".strip() for key in JVM_OPTION_KEYS}


def delta_builder(settings: SparkSettings):
    """Return a configured ``SparkSession.Builder`` (not started)."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(settings.master)
        .appName(settings.app_name)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(settings.shuffle_partitions))
        .config("spark.driver.memory", settings.driver_memory)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.showConsoleProgress", "false")
        # Delta's own test settings: fewer partitions for the log snapshot of small tables.
        .config("spark.databricks.delta.snapshotPartitions", "2")
        # Per-file min/max statistics for the first two columns of a new table only (cluster and snapshot time in
        # bronze), not Delta's 32: reads select whole days by partition and at most a cluster, and the statistics
        # of every column had cost a third of each write (2.4 million topic rows a day on M).
        .config("spark.databricks.delta.properties.defaults.dataSkippingNumIndexedCols", "2")
        # Spark keeps the last 100 classes it generated for plans and expressions; a night generates about 1,650
        # distinct ones, so every night compiled them all again (2,400 Janino compilations on a warm demo night,
        # 200 with this; the warm night 71 -> 57 s, the JVM 103 -> 81 CPU-s). A class is ~3 kB of bytecode.
        .config("spark.sql.codegen.cache.maxEntries", str(CODEGEN_CACHE_ENTRIES))
        # PySpark records each DataFrame and Column call's Python call site in the JVM for its error messages:
        # three times the driver's round trips to the JVM (88 against 27 for a select and a filter), 1.5-2 s of
        # the driver's CPU and 3-6 s of a warm demo night's 47-60 s. Errors still name the operation and the plan;
        # LB_SPARK_CONF can turn it back on.
        .config(DEBUGGING, "false")
    )
    if settings.delta_jars_dir:
        jars = sorted(glob.glob(os.path.join(settings.delta_jars_dir, "*.jar")))
        if not any("delta-spark" in os.path.basename(j) for j in jars):
            raise SetupError(
                f"LB_DELTA_JARS_DIR={settings.delta_jars_dir} holds no delta-spark_*.jar; put the "
                "delta-spark and delta-storage jars there, or unset it to resolve them from Maven Central."
            )
        builder = builder.config("spark.jars", ",".join(jars))
    else:
        from delta import configure_spark_with_delta_pip

        os.makedirs(settings.ivy_dir, exist_ok=True)
        builder = builder.config("spark.jars.ivy", settings.ivy_dir)
        if settings.ivy_settings:
            if not os.path.exists(settings.ivy_settings):
                raise SetupError(f"LB_IVY_SETTINGS names {settings.ivy_settings}, which does not exist.")
            builder = builder.config("spark.jars.ivySettings", settings.ivy_settings)
        else:
            builder = builder.config("spark.jars.ivySettings", central_only_settings(settings.ivy_dir))
        builder = configure_spark_with_delta_pip(builder)
    for key, value in {**settings.conf, **java_options(settings.conf)}.items():
        builder = builder.config(key, value)
    return builder


@contextmanager
def resolution_lock(settings: SparkSettings):
    """Held while a JVM starts that resolves Delta's jars with Ivy: one process at a time per ``ivy_dir``. Ivy's
    cache is not safe for concurrent resolutions; two first starts at once on a fresh machine (a test session and
    the nights it runs beside it) left half-written metadata ("impossible to put metadata file in cache",
    "UNRESOLVED DEPENDENCIES") and failed both. Jars from ``delta_jars_dir`` need no lock."""
    if settings.delta_jars_dir:
        yield
        return
    os.makedirs(settings.ivy_dir, exist_ok=True)
    with open(os.path.join(settings.ivy_dir, ".resolve.lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


JVM_EXITED = ("the Spark driver JVM exited (killed by the kernel when memory ran out? see the system log): "
              "starting a new one")


def get_session(settings: SparkSettings | None = None):
    """Create (once per process) or return the active Delta-enabled SparkSession. A session whose JVM has exited
    (killed by the kernel, say) is forgotten and a new one started, so that a step's retry runs on a live JVM; a
    line on stderr says so."""
    from pyspark.sql import SparkSession

    with _LOCK:
        try:
            active = SparkSession.getActiveSession()
            alive = active is None or not active.sparkContext._jsc.sc().isStopped()
        except Exception:  # noqa: BLE001 - py4j cannot reach the JVM: it is gone
            active, alive = None, False
        if active is not None and alive:
            return active
        if not alive:
            _forget_dead_jvm()
            print(f"lb-pipeline: {JVM_EXITED}", file=sys.stderr, flush=True)
        settings = settings or spark_settings_from_env()
        require_java()
        # Python workers must run the interpreter that has our packages (a venv), not whatever is on PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        builder = delta_builder(settings)
        from lb_pipeline.spark.quiet_start import quiet_start

        try:
            with resolution_lock(settings), quiet_start():
                spark = builder.getOrCreate()
        except Exception as exc:  # Py4J/JVM start-up failures carry long Java traces
            raise SetupError(_explain_start_failure(exc, settings)) from exc
        # ERROR by default: at WARN, Spark logs a stack trace for every glob that matches nothing.
        spark.sparkContext.setLogLevel(os.environ.get("LB_SPARK_LOG_LEVEL", "ERROR"))
        return spark


def scratch_space() -> str:
    """Where a local Spark writes its shuffle and spill files (``spark.local.dir``: LB_SPARK_CONF's, else
    SPARK_LOCAL_DIRS' first folder, else the system's temporary folder)."""
    import tempfile

    from lb_pipeline.settings import spark_settings_from_env

    configured = spark_settings_from_env().conf.get("spark.local.dir") or os.environ.get("SPARK_LOCAL_DIRS")
    return configured.split(",")[0] if configured else tempfile.gettempdir()


def lost_jvm(cls_name: str, message: str) -> bool:
    """Whether an error a step raised is Py4J's for a JVM that is gone (the socket to it refused or closed; a
    ``Py4JError`` that carries no Java exception, which a live JVM raises as ``Py4JJavaError``)."""
    return cls_name in ("ConnectionRefusedError", "Py4JNetworkError", "Py4JError") or any(
        text in message for text in ("Answer from Java side is empty", "Error while sending or receiving",
                                     "Connection refused"))


def _forget_dead_jvm() -> None:
    """PySpark's process-wide state of a session whose JVM exited, dropped so that the builder starts a new JVM
    (``SparkContext.stop`` would call into the dead one)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    sc = SparkContext._active_spark_context
    if sc is not None and getattr(sc, "_accumulatorServer", None) is not None:
        try:
            sc._accumulatorServer.shutdown()
        except Exception:  # noqa: BLE001 - best effort: a Python-side server of the dead context
            pass
    SparkContext._active_spark_context = None
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None


def _explain_start_failure(exc: Exception, settings: SparkSettings) -> str:
    text = str(exc)
    if any(s in text for s in ("ZipException", "zip END header", "invalid LOC header", "error in opening zip file")):
        return (f"a cached jar is damaged (a download cut short?) in {settings.delta_jars_dir or settings.ivy_dir}: "
                "run 'lb-pipeline doctor', which removes damaged jars so the next start downloads them again.")
    if "UNRESOLVED DEPENDENCIES" in text or "unresolved dependency" in text.lower() or "ivy" in text.lower():
        return (
            "Spark could not download the Delta Lake jars from Maven Central (or the mirror in LB_IVY_SETTINGS). "
            "Check network access to Maven, set LB_IVY_SETTINGS to an Ivy settings file for your mirror, or set "
            "LB_DELTA_JARS_DIR to a folder holding delta-spark_*.jar and delta-storage-*.jar."
        )
    if "JAVA_GATEWAY_EXITED" in text or "gateway process exited" in text:
        source = (
            f"the jars in LB_DELTA_JARS_DIR={settings.delta_jars_dir}"
            if settings.delta_jars_dir
            else "Maven Central (or the mirror in LB_IVY_SETTINGS) for the Delta Lake jars"
        )
        return (
            "The Spark JVM exited during start-up; the lines above say why. The usual cause is that Spark could "
            f"not get {source}: check network access, set LB_IVY_SETTINGS to an Ivy settings file for a mirror, "
            "or set LB_DELTA_JARS_DIR to a folder holding delta-spark_*.jar and delta-storage-*.jar."
        )
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return f"Spark failed to start on master {settings.master!r}: {first}"
