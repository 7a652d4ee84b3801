"""Run settings, read from the environment so that the same code runs locally and on a real cluster.

| variable | meaning | default |
|---|---|---|
| ``LB_LAKE_ROOT`` | root of the Delta lake (a path or a URI such as ``s3a://bucket/lake``) | ``./lake`` |
| ``LB_SPARK_MASTER`` | Spark master URL | ``local[2]`` |
| ``LB_SPARK_CONF`` | extra Spark settings as a JSON object (``{"spark.executor.memory": "4g"}``) | none |
| ``LB_DELTA_JARS_DIR`` | folder of Delta jars to use instead of resolving them from Maven | none |
| ``LB_IVY_SETTINGS`` | an Ivy settings file naming a Maven mirror for the Delta jars | none |
| ``LB_IVY_DIR`` | where resolved jars are cached between runs | ``~/.cache/lb_pipeline/ivy`` |
| ``LB_REPORTS_DIR`` | where HTML reports are written | ``./reports-out`` |
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from lb_pipeline.errors import SetupError


@dataclass(frozen=True)
class SparkSettings:
    master: str = "local[2]"
    conf: dict[str, str] = field(default_factory=dict)
    delta_jars_dir: str | None = None
    ivy_settings: str | None = None
    ivy_dir: str = str(Path.home() / ".cache" / "lb_pipeline" / "ivy")
    app_name: str = "lb_pipeline"
    shuffle_partitions: int = 8
    driver_memory: str = "4g"  # Spark's default 1g is tight for a day of a 100-broker cluster

    def with_overrides(self, **kwargs) -> "SparkSettings":
        return replace(self, **{k: v for k, v in kwargs.items() if v is not None})


def _parse_conf(raw: str | None) -> dict[str, str]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SetupError(
            f"LB_SPARK_CONF must be a JSON object such as '{{\"spark.driver.memory\": \"4g\"}}' ({exc})"
        ) from None
    if not isinstance(value, dict):
        raise SetupError("LB_SPARK_CONF must be a JSON object of Spark settings, not " + type(value).__name__)
    return {str(k): str(v) for k, v in value.items()}


def spark_settings_from_env(env: dict[str, str] | None = None) -> SparkSettings:
    env = os.environ if env is None else env
    default = SparkSettings()
    return SparkSettings(
        master=env.get("LB_SPARK_MASTER") or default.master,
        conf=_parse_conf(env.get("LB_SPARK_CONF")),
        delta_jars_dir=env.get("LB_DELTA_JARS_DIR") or None,
        ivy_settings=env.get("LB_IVY_SETTINGS") or None,
        ivy_dir=env.get("LB_IVY_DIR") or default.ivy_dir,
    )


def lake_root_from_env(env: dict[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return env.get("LB_LAKE_ROOT") or str(Path("lake").resolve())


def reports_dir_from_env(env: dict[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return env.get("LB_REPORTS_DIR") or str(Path("reports-out").resolve())
