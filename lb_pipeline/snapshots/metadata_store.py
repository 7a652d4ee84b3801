"""What the modular leader decides from, read from the metadata store (``lb-pipeline collect --metadata-store``).

The admin REST API answers with each broker's *fresh* load report; the leader acts on the copies in the metadata
store, and keeps its own time averages there (``ModularLoadManagerImpl``, Pulsar 3.0 and 4.0 alike):

* ``/loadbalance/brokers/<broker>``: each broker's ``LocalBrokerData`` as the leader reads it (written by the broker
  when its usage moved past ``loadBalancerReportUpdateThresholdPercentage`` or
  ``loadBalancerReportUpdateMaxIntervalMinutes`` passed);
* ``/loadbalance/bundle-data/<tenant>/<ns>/<range>``: the leader's ``BundleData`` (short- and long-term averages);
* ``/loadbalance/broker-time-average/<broker>``: the leader's ``TimeAverageBrokerData``;
* ``/loadbalance/resource-quota/<tenant>/<ns>/<range>``: a bundle's ``ResourceQuota`` an admin set
  (``pulsar-admin resource-quotas set``), which the leader starts a bundle's averages from where it has no stored
  ``BundleData`` (``getBundleDataOrDefault``);
* ``/loadbalance/leader``: the leader's identity (``LeaderBroker``).

The extensible load manager (``ExtensibleLoadManagerImpl``) registers ``BrokerLookupData`` under
``/loadbalance/brokers`` instead and keeps its load data in system topics, which no metadata-store read reaches:
such nodes are recognised and left out, with the reason in the manifest.

The store is untrusted input, as the admin API is: node names are checked with Pulsar's naming rules before they
become file names, each node is bounded in size, and its JSON must be finite numbers in an object.
Read only: the client never writes, and ZooKeeper's ``read_only`` mode lets it read from an observer too. When the
``BundleData`` was last written (its nodes' mtime) is kept too: the leader writes it only every
``loadBalancerResourceQuotaUpdateIntervalMinutes`` (15 by default), and its averages in memory have moved on since.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from typing import NamedTuple

from lb_pipeline.errors import LbError
from lb_pipeline.model import names
from lb_pipeline.model.bundles import printed_range_problem
from lb_pipeline.snapshots import layout

BROKERS, BUNDLE_DATA, TIME_AVERAGE, LEADER = ("/loadbalance/brokers", "/loadbalance/bundle-data",
                                              "/loadbalance/broker-time-average", "/loadbalance/leader")
RESOURCE_QUOTA = "/loadbalance/resource-quota"  # LoadBalanceResources.RESOURCE_QUOTA_BASE_PATH
MAX_NODE_BYTES = 16 * 1024 * 1024  # ZooKeeper's own jute.maxbuffer default is 1 MiB; a node is never near this
MAX_BUNDLES = 1_000_000
_RANGE = re.compile(r"0x[0-9a-f]{8}_0x[0-9a-f]{8}")


class Node(NamedTuple):
    data: bytes
    mtime_ms: int | None  # when the node was last written (ZooKeeper's mtime)


class Versioned(NamedTuple):
    """A node with the store's bookkeeping: the transaction of its last write (``mzxid``), when (``mtime``), its
    ``version``, the transaction that last changed its children (``pzxid``) and the reader's clock (``now_ms``)."""
    data: bytes
    mzxid: int
    mtime: int
    version: int
    pzxid: int
    now_ms: int


class StoreError(Exception):
    """A read of the store failed (connection, session, a node gone between listing and reading)."""


@dataclass(frozen=True)
class StoreUrl:
    """``zk:host:port[,host:port…][/chroot]`` as Pulsar's ``metadataStoreUrl`` spells it (``zk:`` optional)."""

    hosts: str
    chroot: str = ""

    @classmethod
    def parse(cls, url: str) -> StoreUrl:
        text = url.strip()
        for prefix in ("zk:", "zookeeper://"):
            if text.startswith(prefix):
                text = text[len(prefix):]
                break
        else:
            if re.match(r"^[a-z][a-z0-9+.-]*:(?!\d)", text):  # etcd:, rocksdb:, memory:, oxia:…
                raise LbError(f"--metadata-store {url!r}: only ZooKeeper (zk:host:port[/chroot]) is supported")
        hosts, slash, chroot = text.partition("/")
        if not hosts or not all(re.fullmatch(r"[A-Za-z0-9.\-\[\]:]+:\d{1,5}", h) for h in hosts.split(",")):
            raise LbError(f"--metadata-store {url!r}: expected zk:host:port[,host:port…][/chroot]")
        return cls(hosts, ("/" + chroot.strip("/")) if slash and chroot.strip("/") else "")


class ZooKeeperStore:
    """Read-only ZooKeeper access through kazoo: ``children(path)`` and ``get(path)``."""

    def __init__(self, url: StoreUrl, timeout: float = 10.0, auth: str | None = None, use_ssl: bool = False,
                 ca_file: str | None = None, cert_file: str | None = None, key_file: str | None = None):
        try:
            from kazoo.client import KazooClient
        except ImportError as exc:  # pragma: no cover - kazoo is a dependency of the project
            raise LbError("--metadata-store needs the kazoo package (pip install kazoo)") from exc
        auth_data = None
        if auth:
            scheme, sep, credential = auth.partition(":")
            if not sep:
                raise LbError("--metadata-store-auth is scheme:credential, e.g. digest:user:password")
            auth_data = [(scheme, credential)]
        self.url = url
        self._client = KazooClient(hosts=url.hosts + url.chroot, timeout=timeout, read_only=True,
                                   auth_data=auth_data, use_ssl=use_ssl, ca=ca_file, certfile=cert_file,
                                   keyfile=key_file, connection_retry={"max_tries": 2}, command_retry={"max_tries": 2})
        try:
            self._client.start(timeout=timeout)
        except Exception as exc:  # kazoo raises its own timeout and handshake errors
            self._client.close()
            raise LbError(f"cannot connect to the metadata store {url.hosts}{url.chroot}: {exc or type(exc).__name__}") from None

    def children(self, path: str) -> list[str]:
        from kazoo.exceptions import NoNodeError

        try:
            return list(self._client.get_children(path))
        except NoNodeError:
            return []
        except Exception as exc:  # noqa: BLE001 - a lost session or a timeout is a missing part, not a crash
            raise StoreError(f"list {path}: {exc or type(exc).__name__}") from None

    def get(self, path: str) -> Node | None:
        from kazoo.exceptions import NoNodeError

        try:
            data, stat = self._client.get(path)
            return Node(data, int(stat.mtime))
        except NoNodeError:
            return None
        except Exception as exc:  # noqa: BLE001
            raise StoreError(f"read {path}: {exc or type(exc).__name__}") from None

    def get_versioned(self, path: str, data: bool = True) -> Versioned | None:
        """The node with its bookkeeping, or None; ``data=False``: the bookkeeping alone (a cheaper ``exists``)."""
        from kazoo.exceptions import NoNodeError

        try:
            if data:
                value, stat = self._client.get(path)
            else:
                value, stat = b"", self._client.exists(path)
        except NoNodeError:
            return None
        except Exception as exc:  # noqa: BLE001
            raise StoreError(f"read {path}: {exc or type(exc).__name__}") from None
        if stat is None:
            return None
        return Versioned(value or b"", int(stat.mzxid), int(stat.mtime), int(stat.version), int(stat.pzxid),
                         int(time.time() * 1000))

    def close(self) -> None:
        self._client.stop()
        self._client.close()


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def parse_node(path: str, node: Node | None) -> dict:
    """A node's JSON object; raises ``StoreError`` naming the node for anything else."""
    if node is None:
        raise StoreError(f"{path}: the node vanished while it was being read")
    data = node.data
    if len(data) > MAX_NODE_BYTES:
        raise StoreError(f"{path}: larger than {MAX_NODE_BYTES} bytes")
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise StoreError(f"{path}: not a JSON document ({getattr(exc, 'msg', None) or exc})") from None
    if not isinstance(value, dict):
        raise StoreError(f"{path}: expected a JSON object, got {type(value).__name__}")
    if any(isinstance(v, float) and not math.isfinite(v) for v in _numbers(value)):
        raise StoreError(f"{path}: a number outside the range of a double")
    return value


def _numbers(value, depth: int = 0):
    if depth > 64:
        raise StoreError("nested more than 64 levels deep")
    if isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v, depth + 1)
    elif isinstance(value, float):
        yield value


def is_lookup_data(doc: dict) -> bool:
    """``BrokerLookupData`` (extensible load manager) rather than ``LocalBrokerData``: no usage, a version field."""
    return "cpu" not in doc and "lastStats" not in doc and ("brokerVersion" in doc or "role" in doc)


@dataclass
class LeaderInputs:
    """What one read of the store gave: the files to write (relative path → document), the leader, the problems."""

    files: dict[str, dict] = field(default_factory=dict)
    leader: str | None = None
    problems: dict[str, str] = field(default_factory=dict)
    lookup_only: list[str] = field(default_factory=list)  # brokers registered by the extensible load manager
    left_out: list[str] = field(default_factory=list)  # namespaces whose BundleData the format does not hold
    bundle_data_written_ms: int | None = None  # the newest BundleData write (the leader writes them together)

    @property
    def broker_reports(self) -> int:
        return sum(1 for rel in self.files if rel.startswith("lb/brokers/"))


def read_leader_inputs(store, brokers: list[str], before_reports=None) -> LeaderInputs:
    """The leader's inputs for ``brokers`` (those the admin API lists) and every bundle the leader keeps data for.
    The brokers' load reports, which change fastest (a broker rewrites its report every few seconds while its load
    moves), are read last, after ``before_reports()`` (``collect --before-cycle`` waits there for the cycle)."""
    out = LeaderInputs()
    try:
        raw = store.get(LEADER)
        if raw is not None:
            leader = parse_node(LEADER, raw)
            broker_id = leader.get("brokerId") or _netloc(leader.get("serviceUrl"))
            out.leader = broker_id if isinstance(broker_id, str) and not names.broker_problem(broker_id) else None
    except StoreError as exc:
        out.problems[LEADER] = str(exc)
    _read_bundle_tree(store, out, BUNDLE_DATA, "lb/bundle-data", layout.bundle_data, written=True)
    _read_bundle_tree(store, out, RESOURCE_QUOTA, "lb/resource-quota", layout.resource_quota, written=False)
    for folder in (TIME_AVERAGE, BROKERS):
        if folder == BROKERS and before_reports is not None:
            before_reports()
        for broker in brokers:
            rel = layout.local_broker_data(broker) if folder == BROKERS else layout.broker_time_average(broker)
            path = f"{folder}/{broker}"
            try:
                raw = store.get(path)
                if raw is None:
                    continue  # a broker that is not running, or a leader that has not written it yet
                doc = parse_node(path, raw)
            except StoreError as exc:
                out.problems[rel] = str(exc)
                continue
            if folder == BROKERS and is_lookup_data(doc):
                out.lookup_only.append(broker)
                continue
            out.files[rel] = doc
    return out


def _read_bundle_tree(store, out: LeaderInputs, base: str, folder: str, rel_of, written: bool) -> None:
    """``<base>/<tenant>/<ns>/<range>`` (the leader's ``BundleData``, or the admins' ``ResourceQuota``) into
    ``<folder>/…`` files; ``written``: keep the newest node's mtime (the leader writes its BundleData together).
    Left out, and counted in ``left_out``: the brokers' own heartbeat and SLA-monitor namespaces (the shedders leave
    them out too, and their names hold a ``:`` no Hadoop path takes) and v1 namespaces (``<tenant>/<cluster>/<ns>``),
    which the format has no place for. A store without ``base`` (no quota was ever set) holds nothing to read."""
    stack, count = [(base, [])], 0
    while stack:
        path, parts = stack.pop()
        try:
            children = sorted(store.children(path))
        except StoreError as exc:
            out.problems[f"{folder}/{'/'.join(parts)}"] = str(exc)
            continue
        namespace = "/".join(parts)
        if len(parts) == 2 and names.is_sla_or_heartbeat(namespace):
            out.left_out.append(namespace)
            continue
        for child in children:
            if names.entity_problem(child) and not _RANGE.fullmatch(child):
                out.problems[f"{folder}/{namespace}/{child!r}"] = "not a tenant, namespace or bundle name"
            elif len(parts) == 2 and not _RANGE.fullmatch(child):
                out.left_out.append(f"{namespace}/{child}")  # a v1 namespace (or the heartbeat one of a broker)
            elif len(parts) == 2:
                rel = rel_of(f"{namespace}/{child}")
                if problem := names.namespace_problem(namespace) or printed_range_problem(child):
                    out.problems[rel] = problem
                    continue
                count += 1
                if count > MAX_BUNDLES:
                    out.problems[folder] = f"more than {MAX_BUNDLES} bundles: the rest left out"
                    return
                try:
                    node = store.get(f"{path}/{child}")
                    out.files[rel] = parse_node(f"{path}/{child}", node)
                except StoreError as exc:
                    out.problems[rel] = str(exc)
                    continue
                if written and node.mtime_ms is not None:
                    out.bundle_data_written_ms = max(node.mtime_ms, out.bundle_data_written_ms or 0)
            else:
                stack.append((f"{path}/{child}", [*parts, child]))


def _netloc(url) -> str | None:
    if not isinstance(url, str) or "://" not in url:
        return None
    return url.split("://", 1)[1].split("/", 1)[0] or None
