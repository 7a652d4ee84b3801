"""Pulsar load-balancer configuration: Pulsar's own key names and defaults, with version profiles.

Values are kept as strings, as Pulsar's ``get-runtime-config`` / ``get-all-dynamic-config`` return them, and
typed on read. Precedence when built from a snapshot: profile defaults < the leader's runtime config (its
effective ``broker.conf``) < dynamic overrides stored in the metadata store.

Profiles (defaults changed between releases; record the one you replay with):

* ``pulsar-3.0``: before PR #21168 / #22820, direct-memory and heap weights were 1.0;
* ``pulsar-4.0`` (default): Pulsar 4.0.8, ThresholdShedder + LeastLongTermMessageRate;
* ``pulsar-4.0.7``: the same defaults; AvgShedder sorts scores as 4.0.7 did;
* ``pulsar-master-2026``: after PR #26609, AvgShedder for shedding and placement, maxUnloadPercentage 0.5,
  loadBalancerDistributeBundlesEvenlyEnabled false.

Where releases run different code (not just different defaults), ``PulsarConfig.release`` says which branch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from lb_pipeline.model.java_values import java_type, number, problem
from lb_pipeline.model.releases import Release, release_of

T = TypeVar("T")

IMPL = "org.apache.pulsar.broker.loadbalance.impl."
EXT = "org.apache.pulsar.broker.loadbalance.extensions."
MODULAR_LOAD_MANAGER = IMPL + "ModularLoadManagerImpl"
EXTENSIBLE_LOAD_MANAGER = EXT + "ExtensibleLoadManagerImpl"
MIB = 1024 * 1024

_BASE: dict[str, str] = {
    # which code paths
    "loadManagerClassName": MODULAR_LOAD_MANAGER,
    "loadBalancerLoadSheddingStrategy": IMPL + "ThresholdShedder",
    "loadBalancerLoadPlacementStrategy": IMPL + "LeastLongTermMessageRate",
    "loadBalancerEnabled": "true",
    "loadBalancerSheddingEnabled": "true",
    "loadBalancerAutoBundleSplitEnabled": "true",
    "loadBalancerAutoUnloadSplitBundlesEnabled": "true",
    # cadences
    "loadBalancerSheddingIntervalMinutes": "1",
    "loadBalancerSheddingGracePeriodMinutes": "30",
    "loadBalancerSplitIntervalMinutes": "1",
    "loadBalancerResourceQuotaUpdateIntervalMinutes": "15",
    "loadBalancerReportUpdateThresholdPercentage": "10",
    "loadBalancerReportUpdateMaxIntervalMinutes": "15",
    "loadBalancerReportUpdateMinIntervalMillis": "5000",
    "loadBalancerHostUsageCheckIntervalMinutes": "1",
    "statsUpdateFrequencyInSecs": "60",
    # broker usage
    "loadBalancerBrokerOverloadedThresholdPercentage": "85",
    "loadBalancerHistoryResourcePercentage": "0.9",
    "loadBalancerCPUResourceWeight": "1.0",
    "loadBalancerMemoryResourceWeight": "0",
    "loadBalancerDirectMemoryResourceWeight": "0",
    "loadBalancerBandwidthInResourceWeight": "1.0",
    "loadBalancerBandwidthOutResourceWeight": "1.0",
    "loadBalancerBandwithInResourceWeight": "1.0",  # deprecated spellings, still read (see _DEPRECATED)
    "loadBalancerBandwithOutResourceWeight": "1.0",
    "loadBalancerOverrideBrokerNicSpeedGbps": "",
    # ThresholdShedder
    "loadBalancerBrokerThresholdShedderPercentage": "10",
    "loadBalancerBundleUnloadMinThroughputThreshold": "10",
    "lowerBoundarySheddingEnabled": "false",
    # UniformLoadShedder / AvgShedder
    "loadBalancerMsgRateDifferenceShedderThreshold": "50",
    "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold": "4",
    "maxUnloadBundleNumPerShedding": "-1",
    "maxUnloadPercentage": "0.2",
    "minUnloadMessage": "1000",
    "minUnloadMessageThroughput": "1048576",
    "atLeastOneBundleSelected": "true",
    "loadBalancerAvgShedderLowThreshold": "15",
    "loadBalancerAvgShedderHighThreshold": "40",
    "loadBalancerAvgShedderHitCountLowThreshold": "8",
    "loadBalancerAvgShedderHitCountHighThreshold": "2",
    # placement
    "loadBalancerAverageResourceUsageDifferenceThresholdPercentage": "10",
    "loadBalancerDistributeBundlesEvenlyEnabled": "true",
    "loadBalancerBrokerMaxTopics": "50000",
    "failureDomainsEnabled": "false",
    "preferLaterVersions": "false",
    "loadBalancerSheddingExcludedNamespaces": "",
    # extensible load manager (TransferShedder)
    "loadBalancerBrokerLoadTargetStd": "0.25",
    "loadBalancerSheddingConditionHitCountThreshold": "3",
    "loadBalancerMaxNumberOfBrokerSheddingPerCycle": "3",
    "loadBalancerBrokerLoadDataTTLInSeconds": "1800",
    "loadBalanceSheddingDelayInSeconds": "180",
    "loadBalancerTransferEnabled": "true",
    "loadBalancerSheddingBundlesWithPoliciesEnabled": "false",
    "loadBalancerMaxNumberOfBundlesInBundleLoadReport": "10",
    "loadBalancerDebugModeEnabled": "false",
    # bundles and splits
    "defaultNumberOfNamespaceBundles": "4",
    "topicBundleAssignmentStrategy": "org.apache.pulsar.common.naming.ConsistentHashingTopicBundleAssigner",
    "defaultNamespaceBundleSplitAlgorithm": "range_equally_divide",
    "supportedNamespaceBundleSplitAlgorithms": (
        "range_equally_divide,topic_count_equally_divide,specified_positions_divide,flow_or_qps_equally_divide"
    ),
    "flowOrQpsDifferenceThresholdPercentage": "10",
    "loadBalancerNamespaceBundleMaxTopics": "1000",
    "loadBalancerNamespaceBundleMaxSessions": "1000",
    "loadBalancerNamespaceBundleMaxMsgRate": "30000",
    "loadBalancerNamespaceBundleMaxBandwidthMbytes": "100",
    "loadBalancerNamespaceMaximumBundles": "128",
    "loadBalancerMaxNumberOfBundlesToSplitPerCycle": "10",
    "loadBalancerNamespaceBundleSplitConditionHitCountThreshold": "3",
}

PROFILES: dict[str, dict[str, str]] = {
    "pulsar-3.0": {**_BASE, "loadBalancerMemoryResourceWeight": "1.0", "loadBalancerDirectMemoryResourceWeight": "1.0"},
    "pulsar-4.0": dict(_BASE),
    "pulsar-4.0.7": dict(_BASE),
    "pulsar-master-2026": {
        **_BASE,
        "loadBalancerLoadSheddingStrategy": IMPL + "AvgShedder",
        "loadBalancerLoadPlacementStrategy": IMPL + "AvgShedder",
        "maxUnloadPercentage": "0.5",
        "loadBalancerDistributeBundlesEvenlyEnabled": "false",
    },
}
DEFAULT_PROFILE = "pulsar-4.0"

# Deprecated spellings Pulsar still honours: the old key wins only where the new one is left at its default.
_DEPRECATED = {
    "loadBalancerBandwidthInResourceWeight": "loadBalancerBandwithInResourceWeight",
    "loadBalancerBandwidthOutResourceWeight": "loadBalancerBandwithOutResourceWeight",
}

LOAD_BALANCER_KEYS = frozenset(_BASE) | frozenset(_DEPRECATED.values())


def value_problem(key: str, value: str | None) -> str | None:
    """Why a snapshot's ``value`` cannot stand for load-balancer key ``key`` (None: it can). A numeric key takes
    what Pulsar's ``FieldParser`` converts for the field's Java type (``java_values``); a broker that cannot convert
    a dynamic override logs it and keeps the value it had (``BrokerService.updateDynamicServiceConfiguration``), so
    such a row is left out and the runtime value or the default applies. Any text is a boolean (``get_bool``);
    the other keys are text."""
    if java_type(key) is None:
        return None
    return problem(key, "null" if value is None else java_value(value), _BASE.get(key, ""))


def _whole(text: str) -> bool:
    return "." not in text and "e" not in text.lower()


def java_value(value) -> str:
    """A config value as ``brokers get-runtime-config`` prints it (Java's ``toString``) back to broker.conf form:
    ``Optional[10.0]`` → ``10.0``, ``Optional.empty`` → empty, ``[a, b]`` (a List or Set) → ``a,b``."""
    if value is None:
        return ""
    text = str(value).strip()
    if text == "Optional.empty":
        return ""
    if text.startswith("Optional[") and text.endswith("]"):
        return text[len("Optional["):-1]
    if text.startswith("[") and text.endswith("]"):
        return ",".join(x.strip() for x in text[1:-1].split(",") if x.strip())
    return text


class PulsarConfig(Mapping[str, str]):
    """An effective configuration: a profile's defaults overlaid with the values a cluster reported."""

    def __init__(self, values: Mapping[str, str] | None = None, profile: str = DEFAULT_PROFILE):
        if profile not in PROFILES:
            raise ValueError(f"unknown Pulsar version profile {profile!r}; known: {', '.join(PROFILES)}")
        self.profile = profile
        self._values = dict(PROFILES[profile])
        for key, value in (values or {}).items():
            self._values[str(key)] = java_value(value)
        for new, old in _DEPRECATED.items():
            if old in self._values and (values is None or new not in values):
                self._values[new] = self._values[old]

    @property
    def release(self) -> Release:
        """The code paths of this profile's Pulsar release (``releases.RELEASES``)."""
        return release_of(self.profile)

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def _raw(self, key: str) -> str:
        if key not in self._values:
            raise KeyError(f"unknown Pulsar config key {key!r}")
        return self._values[key].strip()

    def get_float(self, key: str) -> float:
        raw = self._raw(key)
        if java_type(key):
            return float(number(key, raw))
        try:
            return float(raw)
        except ValueError:
            raise ValueError(f"config {key}: expected a number, got {raw!r}") from None

    def get_int(self, key: str) -> int:
        """A whole number: a Java int or long key as Pulsar converts it (``85.5`` is no ``int``), a double key cut
        to a whole number."""
        raw = self._raw(key)
        if java_type(key) in ("int", "long"):
            return number(key, raw)
        try:
            value = int(raw) if _whole(raw) else int(float(raw))
        except (ValueError, OverflowError):  # 1e400 is a float, but infinite
            raise ValueError(f"config {key}: expected an integer, got {raw!r}") from None
        if not -(2 ** 63) <= value < 2 ** 63:  # no Java long holds it, nor numpy's int64
            raise ValueError(f"config {key}: expected an integer within a Java long, got {raw!r}")
        return value

    def get_bool(self, key: str) -> bool:
        """As Pulsar reads a boolean (``FieldParser.stringToBoolean``, ``Boolean.valueOf``): true for ``true`` in
        any case, false for anything else."""
        return self._raw(key).lower() == "true"

    def get_list(self, key: str) -> list[str]:
        return [item.strip() for item in self._raw(key).split(",") if item.strip()]

    def derived(self, name: str, build: Callable[["PulsarConfig"], T]) -> T:
        """A value computed from this configuration once (it never changes after construction): the placement
        path asks for its resource weights once per candidate broker, half a million times a day on preset M."""
        memo = self.__dict__.setdefault("_derived", {})
        if name not in memo:
            memo[name] = build(self)
        return memo[name]

    def overridden(self, **values: object) -> "PulsarConfig":
        merged = dict(self._values)
        merged.update({k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in values.items()})
        return PulsarConfig(merged, self.profile)


def parse_broker_conf(text: str) -> dict[str, str]:
    """``broker.conf`` is a Java properties file: ``key=value`` lines, ``#`` comments."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            continue
        values[line[:sep].strip()] = line[sep + 1 :].strip()
    return values


def load_broker_conf(path: str | Path, profile: str = DEFAULT_PROFILE) -> PulsarConfig:
    return PulsarConfig(parse_broker_conf(Path(path).read_text(encoding="utf-8")), profile)


def config_from_snapshot(runtime: Mapping[str, str], dynamic: Mapping[str, str], profile: str = DEFAULT_PROFILE) -> PulsarConfig:
    """Effective config as the leader sees it: its runtime config, then dynamic overrides."""
    return PulsarConfig({**runtime, **dynamic}, profile)
