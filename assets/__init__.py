"""The Dagster code location of lb_pipeline: thin asset, check, schedule and sensor modules over the library."""
