"""Pulsar's naming rules, checked before a name from a cluster (or a file) is trusted.

* tenants, clusters and namespace parts: ``NamedEntity.checkName``, ``^[-=:.\\w]*$`` (ASCII letters, digits,
  ``_``, ``-``, ``=``, ``:``, ``.``), not empty;
* namespaces: ``tenant/namespace`` (v2) or ``tenant/cluster/namespace`` (v1, e.g. heartbeat namespaces);
* bundle ranges: ``0xXXXXXXXX_0xXXXXXXXX`` (eight hex digits each, lower < upper);
* broker ids: ``host:port`` with a DNS name or IPv4 address and a port.

Each check returns ``None`` when the name is valid, else the rule it breaks (for quarantine reasons and
collector errors). Names Pulsar does not restrict (a topic's local name, an anti-affinity group, a failure domain)
are shown through :func:`visible`.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_ENTITY = re.compile(r"[-=:.\w]+", re.ASCII)
_HOST = re.compile(r"(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")


def entity_problem(name: object, what: str = "name") -> str | None:
    if not isinstance(name, str) or not name:
        return f"a {what} must be a non-empty string"
    if name in (".", ".."):
        return f"a {what} cannot be {name!r}"
    if not _ENTITY.fullmatch(name):
        return f"a {what} may only hold letters, digits and _ - = : . (Pulsar's NamedEntity rule), got {name!r}"
    return None


# Character.isWhitespace: these controls, and the space, line and paragraph separators but the no-break ones
_JAVA_CONTROL_SPACE, _NO_BREAK = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"), frozenset("\u00a0\u2007\u202f")


def java_blank(text: str) -> bool:
    """``StringUtils.isBlank``: every character Java's whitespace (Python's ``strip`` also takes no-break spaces)."""
    return all(c in _JAVA_CONTROL_SPACE or (unicodedata.category(c) in ("Zs", "Zl", "Zp") and c not in _NO_BREAK)
               for c in text)


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


# NamespaceService's patterns (String.matches: whole string; \d is ASCII in Java)
_SLA_OR_HEARTBEAT = (re.compile(r"pulsar/[^/]+/[^:]+:[0-9]+"), re.compile(r"pulsar/[^:]+:[0-9]+"),
                     re.compile(r"sla-monitor/[^/]+/[^:]+:[0-9]+"))
SYSTEM_NAMESPACE = "pulsar/system"
# the same as one regular expression (anchored), for Spark's rlike
SYSTEM_NAMESPACE_PATTERN = "^(" + "|".join([SYSTEM_NAMESPACE, *(p.pattern for p in _SLA_OR_HEARTBEAT)]) + ")$"


@lru_cache(maxsize=4096)
def is_sla_or_heartbeat(namespace: str) -> bool:
    """``NamespaceService.isSLAOrHeartbeatNamespace``: a broker's own heartbeat or SLA-monitor namespace."""
    return any(p.fullmatch(namespace) for p in _SLA_OR_HEARTBEAT)


@lru_cache(maxsize=4096)
def is_system_namespace(namespace: str) -> bool:
    """``NamespaceService.isSystemServiceNamespace``: ``pulsar/system`` or an SLA-monitor/heartbeat namespace."""
    return namespace == SYSTEM_NAMESPACE or is_sla_or_heartbeat(namespace)


def broker_problem(broker: object) -> str | None:
    if not isinstance(broker, str) or ":" not in broker:
        return f"a broker id is host:port, got {broker!r}"
    host, port = broker.rsplit(":", 1)
    if not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        return f"a broker id ends with a port number, got {broker!r}"
    if not _HOST.fullmatch(host):
        return f"a broker id starts with a host name or IPv4 address, got {broker!r}"
    return None


_SUSPECT = re.compile(r"[^\x20-\x7e\n\t\r]")  # printable ASCII is never looked at twice
_NOT_ASCII_TEXT = re.compile(r"[^\x20-\x7e]")
_HIDDEN = {"Cc", "Cf", "Cs", "Zl", "Zp"}  # controls, format (bidi, zero-width), lone surrogates, line separators


def shared_hosts(brokers) -> dict[str, list[str]]:
    """The hosts that run more than one of ``brokers`` (``host:port`` ids), each with its brokers, sorted: such
    brokers report the host's CPU and NIC, not their own. Host names compare as DNS does, without case."""
    by_host: dict[str, list[str]] = {}
    for b in sorted(set(brokers)):
        by_host.setdefault(b.rsplit(":", 1)[0].lower(), []).append(b)
    return {h: on_it for h, on_it in sorted(by_host.items()) if len(on_it) > 1}


def _escape(match: re.Match) -> str:
    c = match.group()
    if unicodedata.category(c) not in _HIDDEN:
        return c
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"


def visible(text: str) -> str:
    """``text`` with the characters a terminal or browser would hide or obey written as escapes (``\\u202e``): a
    right-to-left override or a zero-width space makes one name look like another (CVE-2021-42574, "Trojan
    Source"), and an escape sequence rewrites a terminal. Line breaks and tabs pass, and so does ``\\r`` (the
    progress bar's)."""
    return _SUSPECT.sub(_escape, text)


def one_line(text: str) -> str:
    """:func:`visible`, with line breaks and tabs escaped too (``\\x0a``): for a name printed inside a line of
    output. A file named ``x<newline>quarantine: 0 files`` printed a line of its own that read as the program's
    (log forging, CWE-117)."""
    return _NOT_ASCII_TEXT.sub(_escape, text)
