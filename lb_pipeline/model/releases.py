"""What each version profile means in code: the Pulsar release it follows and the code paths that differ.

A profile is more than defaults (those live in ``config.PROFILES``): where Pulsar releases run different code,
the algorithms ask the profile's :class:`Release` which branch to take. Every flag names the Pulsar change that
made it; ``docs/algorithms.md`` lists them. ``pulsar-4.0`` follows 4.0.8 exactly (checked against the real
classes on random inputs: ``tests/conformance``); ``pulsar-4.0.7`` differs only in AvgShedder's sort.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Release:
    profile: str
    follows: str  # the Pulsar release (or branch) whose code the profile reproduces
    # UniformLoadShedder keeps a bundle while its value <= remaining budget + slack (PR #21906 removed the slack)
    uniform_fit_slack: int = 1000
    # AvgShedder sorts broker scores with ``(int) (a - b)`` (4.0.7 and before) instead of comparingDouble (4.0.8)
    avg_int_comparator: bool = False
    # AvgShedder's planned destinations: "value" = keyed by BundleData value, kept, random fallback (4.0.x);
    # "attempt" = keyed by bundle name, valid for one unload attempt (PR #26246)
    avg_plans: str = "value"
    # getBundleDataForLoadShedding also drops pulsar/system (newer master); 4.0.x drops SLA/heartbeat only
    shed_skips_system_namespace: bool = False
    # PIP-380 loadBalancerSheddingExcludedNamespaces is read by doLoadShedding (not in 4.0.x)
    excluded_namespaces: bool = False


RELEASES: dict[str, Release] = {
    # 3.0.x's own defaults (config.PROFILES) on 4.0.8's code: no 3.0 build resolves here to compare with
    "pulsar-3.0": Release("pulsar-3.0", "4.0.8 code with 3.0 defaults"),
    "pulsar-4.0.7": Release("pulsar-4.0.7", "4.0.7", avg_int_comparator=True),
    "pulsar-4.0": Release("pulsar-4.0", "4.0.8"),
    "pulsar-master-2026": Release("pulsar-master-2026", "master, 2026", uniform_fit_slack=0, avg_plans="attempt",
                                  shed_skips_system_namespace=True, excluded_namespaces=True),
}


def release_of(profile: str) -> Release:
    if profile not in RELEASES:
        raise ValueError(f"unknown Pulsar version profile {profile!r}; known: {', '.join(RELEASES)}")
    return RELEASES[profile]


def profile_for(pulsar_version: str | None, default: str = "pulsar-4.0") -> str:
    """The profile matching the version a cluster reports (``brokerVersionString``): 4.0.0-4.0.7 run 4.0.7's
    AvgShedder sort, 4.0.8 and later 4.0.x 4.0.8's; 3.x gets 3.0's defaults; anything else ``default``."""
    parts = (pulsar_version or "").split("-")[0].split(".")
    try:
        major, minor, patch = (int(x) for x in (parts + ["0", "0"])[:3])
    except ValueError:
        return default
    if (major, minor) == (4, 0):
        return "pulsar-4.0.7" if patch <= 7 else "pulsar-4.0"
    if major == 3:
        return "pulsar-3.0"
    return default
