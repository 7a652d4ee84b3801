"""The part of ``pulsar-admin``'s grammar (Pulsar 4.0's picocli commands) that the report prints: a printed command
parses only with every required option present, a value for each option that takes one, no unknown option, the
positional parameter it needs, and no placeholder (``…``, ``N``, ``<x>``) where a value belongs."""

from __future__ import annotations

import re
import shlex

NAMESPACE = re.compile(r"^[^/\s]+/[^/\s]+$")  # tenant/namespace
RANGE = re.compile(r"^0x[0-9a-fA-F]{8}_0x[0-9a-fA-F]{8}$")  # {start-boundary}_{end-boundary}
PLACEHOLDER = re.compile(r"…|\.\.\.|^<.*>$|^N$|^X+$")

# (group, command) -> (positional check or None, {option: (aliases, takes a value, required)})
GRAMMAR = {
    ("namespaces", "unload"): (NAMESPACE, {"--bundle": (("-b",), True, False),
                                           "--destinationBroker": (("-d",), True, False)}),
    ("namespaces", "split-bundle"): (NAMESPACE, {"--bundle": (("-b",), True, True), "--unload": (("-u",), False, False),
                                                 "--split-algorithm-name": (("-san",), True, False),
                                                 "--split-boundaries": (("-sb",), True, False)}),
    ("brokers", "update-dynamic-config"): (None, {"--config": ((), True, True), "--value": ((), True, True)}),
}


def parse(command: str) -> dict:
    """The command's options and positional argument; raises ValueError naming what does not parse."""
    words = shlex.split(command)
    if words[:1] != ["pulsar-admin"] or len(words) < 3:
        raise ValueError(f"not a pulsar-admin command: {command!r}")
    key = (words[1], words[2])
    if key not in GRAMMAR:
        raise ValueError(f"pulsar-admin {key[0]} {key[1]}: not a command the report may print")
    positional, options = GRAMMAR[key]
    names = {alias: name for name, (aliases, _, _) in options.items() for alias in (name, *aliases)}
    seen: dict[str, str | bool] = {}
    args: list[str] = []
    rest = words[3:]
    while rest:
        word = rest.pop(0)
        if word.startswith("-"):
            if word not in names:
                raise ValueError(f"{command!r}: unknown option {word}")
            name = names[word]
            if options[name][1]:
                if not rest or rest[0].startswith("-"):
                    raise ValueError(f"{command!r}: {name} needs a value")
                seen[name] = rest.pop(0)
            else:
                seen[name] = True
        else:
            args.append(word)
    for name, (_, _, required) in options.items():
        if required and name not in seen:
            raise ValueError(f"{command!r}: {name} is required")
    for value in [*args, *(v for v in seen.values() if isinstance(v, str))]:
        if PLACEHOLDER.search(value):
            raise ValueError(f"{command!r}: placeholder {value!r}")
    if positional is None and args or positional is not None and len(args) != 1:
        raise ValueError(f"{command!r}: expected {'no' if positional is None else 'one'} positional parameter, got {args}")
    if positional is not None and not positional.match(args[0]):
        raise ValueError(f"{command!r}: {args[0]!r} is not tenant/namespace")
    if isinstance(seen.get("--bundle"), str) and not RANGE.match(seen["--bundle"]):
        raise ValueError(f"{command!r}: bundle {seen['--bundle']!r} is not a range 0x…_0x…")
    return {"command": key, "options": seen, "args": args}
