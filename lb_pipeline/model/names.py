"""Pulsar's naming rules, checked before a name from a cluster (or a file) is trusted.

* tenants, clusters and namespace parts: ``NamedEntity.checkName``, ``^[-=:.\\w]*$`` (ASCII letters, digits,
  ``_``, ``-``, ``=``, ``:``, ``.``), not empty;
* namespaces: ``tenant/namespace`` (v2) or ``tenant/cluster/namespace`` (v1, e.g. heartbeat namespaces);
* bundle ranges: ``0xXXXXXXXX_0xXXXXXXXX`` (eight hex digits each, lower < upper);
* broker ids: ``host:port`` with a DNS name or IPv4 address and a port.

Each check returns ``None`` when the name is valid, else the rule it breaks (for quarantine reasons and
collector errors).
"""

from __future__ import annotations

import re

_ENTITY = re.compile(r"[-=:.\w]+", re.ASCII)
_RANGE = re.compile(r"0x[0-9a-fA-F]{8}_0x[0-9a-fA-F]{8}")
_HOST = re.compile(r"(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")


def entity_problem(name: object, what: str = "name") -> str | None:
    if not isinstance(name, str) or not name:
        return f"a {what} must be a non-empty string"
    if name in (".", ".."):
        return f"a {what} cannot be {name!r}"
    if not _ENTITY.fullmatch(name):
        return f"a {what} may only hold letters, digits and _ - = : . (Pulsar's NamedEntity rule), got {name!r}"
    return None


def namespace_problem(name: object) -> str | None:
    if not isinstance(name, str):
        return "a namespace must be a string"
    parts = name.split("/")
    if len(parts) not in (2, 3):
        return f"a namespace is tenant/namespace (or tenant/cluster/namespace), got {name!r}"
    for part, what in zip(parts, ("tenant", "cluster", "namespace") if len(parts) == 3 else ("tenant", "namespace")):
        problem = entity_problem(part, what)
        if problem:
            return problem
    return None


def bundle_range_problem(text: object) -> str | None:
    if not isinstance(text, str) or not _RANGE.fullmatch(text):
        return f"a bundle range is 0xXXXXXXXX_0xXXXXXXXX, got {text!r}"
    lower, upper = (int(x, 16) for x in text.split("_"))
    if not lower < upper:
        return f"a bundle range needs lower < upper, got {text!r}"
    return None


def bundle_problem(name: object) -> str | None:
    """A bundle's full name: ``<namespace>/<range>``."""
    if not isinstance(name, str) or "/" not in name:
        return f"a bundle is namespace/0xXXXXXXXX_0xXXXXXXXX, got {name!r}"
    ns, rng = name.rsplit("/", 1)
    return namespace_problem(ns) or bundle_range_problem(rng)


def broker_problem(broker: object) -> str | None:
    if not isinstance(broker, str) or ":" not in broker:
        return f"a broker id is host:port, got {broker!r}"
    host, port = broker.rsplit(":", 1)
    if not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        return f"a broker id ends with a port number, got {broker!r}"
    if not _HOST.fullmatch(host):
        return f"a broker id starts with a host name or IPv4 address, got {broker!r}"
    return None
