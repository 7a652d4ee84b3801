"""Pulsar's domain model, as plain Python: bundles and hashing, configuration keys and defaults."""
