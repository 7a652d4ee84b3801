"""``topics/<broker>.json`` (``broker-stats topics``) and ``ownership/<broker>.json`` to rows."""

from __future__ import annotations

from lb_pipeline.formats.values import (
    Problem, Row, RowProblem, _bundle_full_name, _kind, _obj, _rows, boolean, integer, num,
)
from lb_pipeline.model import names
from lb_pipeline.model.bundles import printed_range_problem, topic_namespace


def parse_topic_stats(doc, broker: str) -> tuple[list[Row], list[Problem]]:
    """``topics/<broker>.json`` (``broker-stats topics``): namespace → range → domain → topic → stats."""
    doc = _obj(doc, "(root)")
    rows, problems = [], []
    for namespace, bundles in doc.items():
        if problem := names.namespace_problem(namespace):
            problems.append(Problem(namespace, problem))
            continue
        if not isinstance(bundles, dict):
            problems.append(Problem(namespace, f"expected an object of bundle ranges, got {_kind(bundles)}"))
            continue
        for rng, domains in bundles.items():
            if problem := printed_range_problem(rng):
                problems.append(Problem(f"{namespace}.{rng}", problem))
                continue
            if not isinstance(domains, dict):
                problems.append(Problem(f"{namespace}.{rng}", f"expected an object with 'persistent', got {_kind(domains)}"))
                continue
            for domain, topics in domains.items():
                if domain not in ("persistent", "non-persistent"):
                    problems.append(Problem(f"{namespace}.{rng}.{domain}", "expected 'persistent' or 'non-persistent'"))
                    continue
                if not isinstance(topics, dict):
                    problems.append(Problem(f"{namespace}.{rng}.{domain}", f"expected an object of topics, got {_kind(topics)}"))
                    continue
                for topic, s in topics.items():
                    field = f"{namespace}.{rng}.{domain}[{topic}]"
                    try:
                        rows.append(_topic_row(broker, namespace, rng, domain, topic, s, field))
                    except RowProblem as exc:
                        problems.append(exc.problem)
    return rows, problems


# A topic's numbers in the order they are checked: (column, key, reader, options). A value of the usual kind and
# range is taken as it is; any other goes to the reader, which converts it or names the problem.
_NUMBERS = (("msg_rate_in", "msgRateIn", num, {}), ("msg_rate_out", "msgRateOut", num, {}),
            ("msg_throughput_in", "msgThroughputIn", num, {}), ("msg_throughput_out", "msgThroughputOut", num, {}),
            ("producer_count", "producerCount", integer, {"required": False, "bits": 32}),
            ("average_msg_size", "averageMsgSize", num, {"required": False}),
            ("storage_size", "storageSize", integer, {"required": False}),
            ("backlog_size", "backlogSize", integer, {"required": False, "nonneg": False}),
            ("msg_in_count", "msgInCount", integer, {"required": False}),
            ("bytes_in_count", "bytesInCount", integer, {"required": False}))
_INF = float("inf")


def _topic_row(broker, namespace, rng, domain, topic, s, field) -> Row:
    s = _obj(s, field, row_level=True)
    prefix = f"{domain}://{namespace}/"
    if not topic.startswith(prefix):
        raise RowProblem(field, f"expected a topic name starting with {domain}://{namespace}/")
    local = topic[len(prefix):]
    if "/" not in local and (local[:1].isalnum() or not names.java_blank(local)):
        read_as = namespace  # what TopicName reads from a checked namespace and a one-part local name, without parsing it
    else:
        try:
            read_as = topic_namespace(topic)
        except ValueError as refused:
            raise RowProblem(field, f"expected a topic name Pulsar's TopicName accepts: {refused}") from None
    if read_as != namespace:  # e.g. persistent://t/ns/a/b, which Pulsar reads as namespace t/ns/a
        raise RowProblem(field, f"expected a topic of namespace {namespace}; Pulsar reads {topic!r} as one of "
                                f"{read_as!r}")
    subs = {} if s.get("subscriptions") is None else s["subscriptions"]  # absent or null: none; 0 or [] are wrong
    if not isinstance(subs, dict):
        raise RowProblem(field + ".subscriptions", f"expected an object, got {_kind(subs)}")
    consumers = 0
    for name, sub in subs.items():
        sub = _obj(sub, f"{field}.subscriptions[{name}]", row_level=True)
        cons = [] if sub.get("consumers") is None else sub["consumers"]
        if not isinstance(cons, list):
            raise RowProblem(f"{field}.subscriptions[{name}].consumers", f"expected an array, got {_kind(cons)}")
        consumers += len(cons)
    row = {"broker": broker, "namespace": namespace, "bundle_range": rng, "bundle": f"{namespace}/{rng}",
           "topic": topic, "domain": domain, "consumer_count": consumers, "subscription_count": len(subs)}
    for column, key, reader, options in _NUMBERS:  # 2.4 million topics a day on M: the usual case costs one test
        v = s.get(key)
        if type(v) is float and 0.0 <= v < _INF and reader is num or type(v) is int and 0 <= v < 2 ** 31:
            row[column] = float(v) if reader is num else v
        else:
            row[column] = reader(s, key, f"{field}.{key}", **options)
    row["producer_count"] = row["producer_count"] or 0
    return row


def parse_ownership(doc, broker: str) -> tuple[list[Row], list[Problem]]:
    """``ownership/<broker>.json`` (``brokers namespaces``): bundle full name → assignment flags."""
    doc = _obj(doc, "(root)")

    def make(name, v) -> Row:
        v = _obj(v, name, row_level=True)
        namespace, rng = _bundle_full_name(name, name)
        assignment = v.get("broker_assignment")
        if assignment is not None and not isinstance(assignment, str):
            raise RowProblem(f"{name}.broker_assignment", f"expected a string, got {_kind(assignment)}")
        return {"broker": broker, "bundle": name, "namespace": namespace, "bundle_range": rng,
                "assignment": assignment, "is_active": boolean(v, "is_active", f"{name}.is_active", True)}

    return _rows(doc.items(), make)
