"""Spark plumbing: the one session builder and the Delta lake helpers."""
