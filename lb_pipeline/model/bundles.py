"""Namespace bundles and topic hashing, as Pulsar's code does them.

Reproduces ``common/naming/NamespaceBundle``, ``NamespaceBundles``, ``NamespaceBundleFactory`` and the default
``ConsistentHashingTopicBundleAssigner``:

* the hash space of every namespace is ``[0x00000000, 0xffffffff]`` (the upper end is 0xffffffff, not 2**32);
* a bundle ``[lo, up)`` holds hashes ``lo <= h < up``; the last bundle (``up == 0xffffffff``) is closed;
* the topic hash is CRC-32 of the fully qualified topic name in UTF-8 (Guava ``Hashing.crc32().padToLong()``,
  identical to ``zlib.crc32``), partitions hashed with their ``-partition-N`` suffix;
* ``NamespaceBundles.findBundle`` binary-searches the boundaries; for a hash of exactly 0xffffffff Java throws
  IndexOutOfBounds although the last bundle contains it. We map it to the last bundle (``includes`` agrees)
  and record the deviation here.
"""

from __future__ import annotations

import bisect
import functools
import re
import zlib
from dataclasses import dataclass

from lb_pipeline.model.names import java_blank, namespace_problem

FULL_LOWER_BOUND = 0x00000000
FULL_UPPER_BOUND = 0xFFFFFFFF
_RANGE = re.compile(r"^(0[xX][0-9a-fA-F]+)_(0[xX][0-9a-fA-F]+)$")
_DOMAINS = ("persistent", "non-persistent")


def normalize_topic_name(name: str) -> str:
    """``TopicName.get(name).toString()``: ``my-topic`` → ``persistent://public/default/my-topic``;
    ``tenant/ns/t`` → ``persistent://tenant/ns/t``; a full name with its domain in lower case (Pulsar reads it in any
    case). ValueError where ``TopicName`` throws: a short name of 2 or 4+ parts, a full name of fewer than 3 parts
    after the domain, a blank local name, a namespace ``NamespaceName`` refuses."""
    if "://" not in name:
        parts = name.split("/")
        if len(parts) == 1:
            return f"persistent://public/default/{name}"
        if len(parts) != 3:
            raise ValueError(f"topic {name!r}: a short topic name is <tenant>/<namespace>/<topic> or <topic>")
        name = f"persistent://{name}"
    domain, rest = name.split("://", 1)
    if domain.lower() not in _DOMAINS:
        raise ValueError(f"topic {name!r}: domain must be persistent or non-persistent")
    parts = rest.split("/", 3)  # tenant/namespace/local or tenant/cluster/namespace/local (V1)
    if len(parts) < 3:
        raise ValueError(f"topic {name!r}: expected <domain>://<tenant>/<namespace>/<topic>")
    if java_blank(parts[-1]):  # TopicName: StringUtils.isBlank
        raise ValueError(f"topic {name!r}: the topic's local name must not be blank")
    if problem := _namespace_problem("/".join(parts[:-1])):
        raise ValueError(f"topic {name!r}: {problem}")
    return f"{domain.lower()}://{rest}"


@functools.lru_cache(maxsize=4096)  # a night names millions of topics in a few namespaces
def _namespace_problem(namespace: str) -> str | None:
    return namespace_problem(namespace)


def topic_hash(full_topic_name: str) -> int:
    """CRC-32 (unsigned) of the normalised full topic name, as ``NamespaceBundleFactory.getLongHashCode``."""
    return zlib.crc32(normalize_topic_name(full_topic_name).encode("utf-8")) & 0xFFFFFFFF


def topic_namespace(full_topic_name: str) -> str:
    rest = normalize_topic_name(full_topic_name).split("://", 1)[1]
    return rest.rsplit("/", 1)[0]


def format_boundary(value: int) -> str:
    return f"0x{value:08x}"


def format_range(lower: int, upper: int) -> str:
    return f"0x{lower:08x}_0x{upper:08x}"


def parse_range(text: str) -> tuple[int, int]:
    """Parse ``0xLLLLLLLL_0xUUUUUUUU`` (``Long.decode`` on each side, so upper-case hex is accepted)."""
    m = _RANGE.match(text.strip())
    if not m:
        raise ValueError(f"bundle range {text!r} is not of the form 0xLLLLLLLL_0xUUUUUUUU")
    lower, upper = int(m.group(1), 16), int(m.group(2), 16)
    if not FULL_LOWER_BOUND <= lower < upper <= FULL_UPPER_BOUND:
        raise ValueError(f"bundle range {text!r} is outside the hash space or empty")
    return lower, upper


def printed_range_problem(text: str) -> str | None:
    """Why ``text`` is not a bundle range as Pulsar prints one (``NamespaceBundle``: ``0x%08x_0x%08x``), or None.
    Pulsar writes no other spelling, and the lake keys bundles by this text: ``0X80000000_0X90000000`` or
    ``0x8000000_0x9000000`` would be another bundle than the namespace's, though ``Long.decode`` reads the same
    range from it."""
    try:
        lower, upper = parse_range(text)
    except ValueError as exc:
        return str(exc)
    printed = format_range(lower, upper)
    if text != printed:
        return f"expected the bundle range as Pulsar prints it (0x%08x_0x%08x, lower case), {printed!r}, got {text!r}"
    return None


def split_bundle_name(full_name: str) -> tuple[str, str]:
    """``tenant/ns/0x..._0x...`` → (``tenant/ns``, ``0x..._0x...``)."""
    namespace, _, rng = full_name.rpartition("/")
    if not namespace:
        raise ValueError(f"bundle name {full_name!r} has no namespace part")
    parse_range(rng)
    return namespace, rng


def default_boundaries(num_bundles: int) -> list[int]:
    """Boundaries of a namespace created with N bundles (``NamespacesBase.getBundles``): the 2**32 // N grid
    with the last boundary forced to 0xffffffff, so the remainder falls into the last bundle."""
    if num_bundles <= 0:
        raise ValueError("number of bundles must be positive")
    seg = (1 << 32) // num_bundles
    return [i * seg for i in range(num_bundles)] + [FULL_UPPER_BOUND]


def parse_boundaries(values: list[str]) -> list[int]:
    return [int(v, 16) for v in values]


def validate_boundaries(boundaries: list[int]) -> None:
    """The rules a ``NamespaceBundles`` object enforces; raises ValueError naming the first violation."""
    if len(boundaries) < 2:
        raise ValueError("a namespace needs at least 2 boundaries")
    if boundaries[0] != FULL_LOWER_BOUND or boundaries[-1] != FULL_UPPER_BOUND:
        raise ValueError("boundaries must start at 0x00000000 and end at 0xffffffff")
    for a, b in zip(boundaries, boundaries[1:]):
        if b <= a:
            raise ValueError(f"boundaries must increase strictly: {format_boundary(a)} then {format_boundary(b)}")


@dataclass(frozen=True)
class Bundle:
    namespace: str
    lower: int
    upper: int

    @property
    def range(self) -> str:
        return format_range(self.lower, self.upper)

    @property
    def name(self) -> str:
        return f"{self.namespace}/{self.range}"

    @property
    def is_last(self) -> bool:
        return self.upper == FULL_UPPER_BOUND

    def contains_hash(self, h: int) -> bool:
        return self.lower <= h < self.upper or (self.is_last and h == self.upper)

    def includes(self, topic: str) -> bool:
        """``NamespaceBundle.includes``: same namespace and the hash is in range."""
        return topic_namespace(topic) == self.namespace and self.contains_hash(topic_hash(topic))

    @property
    def can_split(self) -> bool:
        return self.upper - self.lower > 1

    @property
    def hash_range_share(self) -> float:
        """Share of the namespace's hash space (the last bundle counts its closed end)."""
        return (self.upper - self.lower + (1 if self.is_last else 0)) / (1 << 32)


class NamespaceBundles:
    """One namespace's bundle layout (``NamespaceBundles``)."""

    def __init__(self, namespace: str, boundaries: list[int]):
        validate_boundaries(boundaries)
        self.namespace = namespace
        self.boundaries = list(boundaries)

    @classmethod
    def with_default(cls, namespace: str, num_bundles: int) -> "NamespaceBundles":
        return cls(namespace, default_boundaries(num_bundles))

    @classmethod
    def from_bundles_data(cls, namespace: str, data: dict) -> "NamespaceBundles":
        """From Pulsar's ``BundlesData`` JSON: ``{"boundaries": ["0x00000000", ...], "numBundles": N}``."""
        return cls(namespace, parse_boundaries(data["boundaries"]))

    def to_bundles_data(self) -> dict:
        return {"boundaries": [format_boundary(b) for b in self.boundaries], "numBundles": len(self)}

    def __len__(self) -> int:
        return len(self.boundaries) - 1

    @property
    def bundles(self) -> list[Bundle]:
        return [Bundle(self.namespace, a, b) for a, b in zip(self.boundaries, self.boundaries[1:])]

    def index_of_hash(self, h: int) -> int:
        if not FULL_LOWER_BOUND <= h <= FULL_UPPER_BOUND:
            raise ValueError(f"hash {h} is outside the 32-bit hash space")
        # bisect_right - 1 = index of the greatest boundary <= h, as Java's binarySearch-based lookup.
        # h == 0xffffffff gives len(self); Java throws there, we map it to the last bundle (see module doc).
        return min(bisect.bisect_right(self.boundaries, h) - 1, len(self) - 1)

    def find_bundle(self, topic: str) -> Bundle:
        if topic_namespace(topic) != self.namespace:
            raise ValueError(f"topic {topic!r} is not in namespace {self.namespace!r}")
        i = self.index_of_hash(topic_hash(topic))
        return Bundle(self.namespace, self.boundaries[i], self.boundaries[i + 1])

    def bundle_by_range(self, rng: str) -> Bundle:
        lower, upper = parse_range(rng)
        for b in self.bundles:
            if b.lower == lower and b.upper == upper:
                return b
        raise KeyError(f"{self.namespace} has no bundle {rng}")

    def split(self, bundle: Bundle, num_parts: int = 2, boundaries: list[int] | None = None) -> tuple[
        "NamespaceBundles", list[Bundle]
    ]:
        """``NamespaceBundleFactory.splitBundles``: the new layout and the children.

        With explicit boundaries they are sorted (duplicates kept, so they fail as empty children) and must lie
        strictly inside the bundle; otherwise the bundle is cut in ``num_parts`` equal segments of its own width
        (the remainder goes to the last child: a 2-way split of the full range gives 0x7fffffff).
        """
        if not bundle.can_split:
            raise ValueError(f"bundle {bundle.name} can't be split further")
        if boundaries:
            cuts = sorted(boundaries)
            if not (cuts[0] > bundle.lower and cuts[-1] < bundle.upper):
                raise ValueError(
                    f"split boundaries {[format_boundary(c) for c in cuts]} must lie strictly inside {bundle.range}"
                )
        else:
            if num_parts < 2:
                raise ValueError("a split needs at least 2 parts")
            seg = (bundle.upper - bundle.lower) // num_parts
            cuts = [bundle.lower + seg * j for j in range(1, num_parts)]
        try:
            i = self.boundaries.index(bundle.lower)
        except ValueError:
            i = -1
        if i < 0 or self.boundaries[i + 1] != bundle.upper:
            raise KeyError(f"{self.namespace} has no bundle {bundle.range}")
        new = self.boundaries[: i + 1] + cuts + self.boundaries[i + 1 :]
        try:
            layout = NamespaceBundles(self.namespace, new)
        except ValueError as exc:
            raise ValueError(f"splitting {bundle.name} would create an empty bundle: {exc}") from None
        return layout, layout.bundles[i : i + len(cuts) + 1]
