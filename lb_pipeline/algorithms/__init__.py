"""Pulsar's load-balancing algorithms as pure, deterministic Python (no Spark, no Dagster inside)."""
