"""Resources: the one Spark session, the Delta lake, the landing folder of snapshots, the report folder.

Every field defaults to ``None``, meaning "take the value from the environment" (see ``lb_pipeline.settings``),
so a deployment configures them either through Dagster run config or through ``LB_*`` variables.
"""


import os
from pathlib import Path

import dagster as dg

from lb_pipeline.settings import lake_root_from_env, reports_dir_from_env, spark_settings_from_env
from lb_pipeline.spark.lake import Lake
from lb_pipeline.spark.session import get_session


class SparkResource(dg.ConfigurableResource):
    """One SparkSession per process (the code location runs with the in-process executor)."""

    master: str | None = None
    conf: dict[str, str] | None = None
    delta_jars_dir: str | None = None
    ivy_settings: str | None = None

    @property
    def session(self):
        settings = spark_settings_from_env()
        conf = {**settings.conf, **(self.conf or {})}
        return get_session(settings.with_overrides(master=self.master, conf=conf, delta_jars_dir=self.delta_jars_dir,
                                                   ivy_settings=self.ivy_settings))


class LakeResource(dg.ConfigurableResource):
    root: str | None = None

    @property
    def lake(self) -> Lake:
        return Lake(self.root or lake_root_from_env())


class LandingResource(dg.ConfigurableResource):
    """The folder collectors and the generator write snapshot directories to (``<cluster>/<timestamp>/``)."""

    path: str | None = None

    @property
    def folder(self) -> str:
        return self.path or os.environ.get("LB_LANDING") or str(Path("landing").resolve())


class ReportsResource(dg.ConfigurableResource):
    path: str | None = None

    @property
    def folder(self) -> str:
        return self.path or reports_dir_from_env()
