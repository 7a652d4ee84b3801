"""``pulsar-admin`` commands an operator would run, shell-quoted (names come from the cluster, not from us)."""

from __future__ import annotations

import shlex


def split_bundle(namespace: str, bundle_range: str, algorithm: str, boundaries: list[int] | None = None,
                 unload: bool = True) -> str:
    args = ["pulsar-admin", "namespaces", "split-bundle", "--bundle", bundle_range, "--split-algorithm-name", algorithm]
    if boundaries:
        args += ["--split-boundaries", ",".join(str(b) for b in boundaries)]
    if unload:
        args.append("--unload")
    args.append(namespace)
    return shlex.join(args)


def unload_bundle(namespace: str, bundle_range: str, destination: str | None = None) -> str:
    args = ["pulsar-admin", "namespaces", "unload", namespace, "--bundle", bundle_range]
    if destination:
        args += ["--destinationBroker", destination]
    return shlex.join(args)
