"""Snapshots: one directory per instant holding Pulsar's own JSON (see docs/snapshot-format.md)."""
