"""Configuration numbers as Pulsar converts them: by the Java type of the ``ServiceConfiguration`` field.

A dynamic override is stored as text in the metadata store, and each broker converts it with ``FieldParser``
(pulsar-common 4.0.8): ``stringToInteger`` is ``Integer.valueOf``, ``stringToLong`` ``Long.valueOf``,
``stringToDouble`` ``Double.valueOf``, each on the trimmed text. A broker that cannot convert an override logs it
and keeps the value it had (``BrokerService.updateDynamicServiceConfiguration``). So ``85.5`` is no value for
``loadBalancerBrokerOverloadedThresholdPercentage`` (an ``int``), ``1e3`` none for a count, ``3000000000`` none for
an ``int`` although a ``long`` holds it; and ``1d`` or ``0x1p3`` are doubles, which Python's ``float`` refuses
while it accepts ``1_000`` and ``inf``, which Java refuses.
"""

from __future__ import annotations

import functools
import math
import re

# the Java type of every load-balancer key whose default is a number, read from ServiceConfiguration 4.0.8 with
# javap (pulsar-broker-common-4.0.8.jar); a key not listed here is text or a boolean
LONG_KEYS = frozenset({
    "loadBalancerSheddingGracePeriodMinutes", "loadBalancerBrokerLoadDataTTLInSeconds",
    "loadBalanceSheddingDelayInSeconds",
})
DOUBLE_KEYS = frozenset({
    "loadBalancerHistoryResourcePercentage", "loadBalancerCPUResourceWeight", "loadBalancerMemoryResourceWeight",
    "loadBalancerDirectMemoryResourceWeight", "loadBalancerBandwidthInResourceWeight",
    "loadBalancerBandwidthOutResourceWeight", "loadBalancerBandwithInResourceWeight",
    "loadBalancerBandwithOutResourceWeight", "loadBalancerBundleUnloadMinThroughputThreshold",
    "loadBalancerMsgRateDifferenceShedderThreshold", "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold",
    "maxUnloadPercentage", "loadBalancerBrokerLoadTargetStd",
    "loadBalancerOverrideBrokerNicSpeedGbps",
})
OPTIONAL_KEYS = frozenset({"loadBalancerOverrideBrokerNicSpeedGbps"})  # Optional<Double>: empty text is Optional.empty
INT_KEYS = frozenset({
    "loadBalancerSheddingIntervalMinutes", "loadBalancerSplitIntervalMinutes",
    "loadBalancerResourceQuotaUpdateIntervalMinutes", "loadBalancerReportUpdateThresholdPercentage",
    "loadBalancerReportUpdateMaxIntervalMinutes", "loadBalancerReportUpdateMinIntervalMillis",
    "loadBalancerHostUsageCheckIntervalMinutes", "statsUpdateFrequencyInSecs",
    "loadBalancerBrokerOverloadedThresholdPercentage", "loadBalancerBrokerThresholdShedderPercentage",
    "maxUnloadBundleNumPerShedding", "minUnloadMessage", "minUnloadMessageThroughput",
    "loadBalancerAvgShedderLowThreshold", "loadBalancerAvgShedderHighThreshold",
    "loadBalancerAvgShedderHitCountLowThreshold", "loadBalancerAvgShedderHitCountHighThreshold",
    "loadBalancerAverageResourceUsageDifferenceThresholdPercentage", "loadBalancerBrokerMaxTopics",
    "loadBalancerSheddingConditionHitCountThreshold", "loadBalancerMaxNumberOfBrokerSheddingPerCycle",
    "loadBalancerMaxNumberOfBundlesInBundleLoadReport", "defaultNumberOfNamespaceBundles",
    "flowOrQpsDifferenceThresholdPercentage", "loadBalancerNamespaceBundleMaxTopics",
    "loadBalancerNamespaceBundleMaxSessions", "loadBalancerNamespaceBundleMaxMsgRate",
    "loadBalancerNamespaceBundleMaxBandwidthMbytes", "loadBalancerNamespaceMaximumBundles",
    "loadBalancerMaxNumberOfBundlesToSplitPerCycle", "loadBalancerNamespaceBundleSplitConditionHitCountThreshold",
})
_BITS = {"int": 32, "long": 64}

# Integer.parseInt: a sign, then digits (Character.digit: any Unicode decimal digit, as Python's \d and int())
_INTEGER = re.compile(r"[+-]?\d+")
# FloatingDecimal.readJavaFormatString: ASCII digits, an optional f/F/d/D suffix, hexadecimal with a binary exponent
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?")
_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?")


def java_type(key: str) -> str | None:
    """``int``, ``long`` or ``double`` for a numeric load-balancer key; None for any other."""
    return "int" if key in INT_KEYS else "long" if key in LONG_KEYS else "double" if key in DOUBLE_KEYS else None


_TRIMMED = "".join(chr(c) for c in range(0x21))  # String.trim: every character up to U+0020, and only those


def _java_trim(text: str) -> str:
    return text.strip(_TRIMMED)


def java_integer(text: str, bits: int) -> int | None:
    """``Integer.valueOf`` (32 bits) or ``Long.valueOf`` (64) of the trimmed text; None where Java throws."""
    text = _java_trim(text)
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1) else None


def java_double(text: str) -> float | None:
    """``Double.valueOf`` of the trimmed text (``NaN`` and ``Infinity`` included); None where Java throws."""
    text = _java_trim(text)
    body = text.lstrip("+-")
    if body in ("NaN", "Infinity"):
        return float(text.replace("Infinity", "inf").replace("NaN", "nan"))
    if _DECIMAL.fullmatch(text):
        return float(text.rstrip("fFdD"))
    if _HEX.fullmatch(text):
        return float.fromhex(text.rstrip("fFdD"))
    return None


def problem(key: str, text: str, default: str | None = None) -> str | None:
    """Why a broker would not convert ``text`` for numeric ``key``, or why the replays do not take the value it
    converts to (None: neither), naming Pulsar's ``default`` when given. Pulsar takes NaN and Infinity for a
    double; no replay reproduces a threshold that is not a number, so such a value is refused, not replayed wrongly."""
    kind = java_type(key)
    if kind is None:
        return None
    if kind == "double":
        if text == "" and key in OPTIONAL_KEYS:  # Optional.empty
            return None
        value = java_double(text)
    else:
        value = java_integer(text, _BITS[kind])
    bits = _BITS.get(kind)
    notes = [f"a whole number from -2^{bits - 1} to 2^{bits - 1}-1"] if bits else []
    notes += [f"Pulsar's default is {default or 'empty'}"] if default is not None else []
    expected = f"a Java {kind}" + (f" ({'; '.join(notes)})" if notes else "")
    if value is None:
        return f"expected {expected}, got {text!r}"
    if not math.isfinite(value):
        java = "NaN" if math.isnan(value) else ("-" if value < 0 else "") + "Infinity"
        return f"expected a finite number, got {text!r}: Pulsar would take it as {java}, which no replay reproduces"
    return None


@functools.lru_cache(maxsize=4096)  # the strategies read their thresholds every cycle: a handful of distinct values
def number(key: str, text: str) -> int | float:
    """The value a broker converts ``text`` to for numeric ``key``; ValueError, naming the key, where ``problem``
    says why not."""
    if reason := problem(key, text):
        raise ValueError(f"config {key}: {reason}")
    value = java_integer(text, _BITS[java_type(key)]) if java_type(key) in _BITS else java_double(text)
    if value is None:  # an Optional left empty: no number to read
        raise ValueError(f"config {key}: no value (Optional.empty)")
    return value


LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def java_long(value: int) -> int:
    """``value`` as Java's ``long`` arithmetic leaves it: wrapped to 64 bits (``now - x`` overflows silently)."""
    return (value - LONG_MIN) % 2**64 + LONG_MIN


def java_int(value: int) -> int:
    """``value`` as Java's ``int`` arithmetic leaves it: wrapped to 32 bits (``4096 * 1048576`` is 0)."""
    return (value + 2**31) % 2**32 - 2**31


def int_cast(x: float) -> int:
    """Java's ``(int)`` cast of a double: toward zero, saturating (infinities too), NaN → 0."""
    if -2147483648.0 < x < 2147483648.0:
        return int(x)
    if x != x:
        return 0
    return 2**31 - 1 if x > 0 else -(2**31)


def minutes_to_millis(minutes: int) -> int:
    """``TimeUnit.MINUTES.toMillis``: held at ``Long.MAX_VALUE`` or ``Long.MIN_VALUE`` where the product overflows."""
    return max(LONG_MIN, min(LONG_MAX, minutes * 60_000))


def grace_cutoff(now_ms: int, grace_minutes: int) -> int:
    """The time before which a recently unloaded bundle is forgotten, as both load managers compute it
    (``ModularLoadManagerImpl.doLoadShedding``, ``UnloadScheduler.execute``): ``System.currentTimeMillis() -
    TimeUnit.MINUTES.toMillis(loadBalancerSheddingGracePeriodMinutes)``. A grace period past about 1.5·10^14 minutes
    either way saturates the product, and a negative one that large then wraps the difference: -2^62 minutes holds
    every unloaded bundle for good, where plain arithmetic would forget them at once."""
    return java_long(now_ms - minutes_to_millis(grace_minutes))
