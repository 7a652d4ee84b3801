"""Whole-string regex matching in time linear in the subject, for the regexes of namespace isolation policies.

Pulsar matches an isolation policy's namespace, primary and secondary regexes with ``java.util.regex``
(``NamespaceIsolationPolicyImpl``), a backtracking engine, as Python's ``re`` is: ``(a|a)*b`` against forty ``a``s
takes 2^40 steps in both. A policy file is input we do not control, and one such regex would stop the night in
the first replay that places a bundle. So the replays match with a Pike VM instead (Thompson's construction, every
thread advanced one character at a time; Russ Cox, "Regular Expression Matching: the Virtual Machine Approach"):
the answer of ``re.fullmatch`` for every pattern it accepts, in O(len(pattern) × len(subject)) steps.

Python's ``re`` still decides what each single character means (literals, escapes, classes, ``.``, under the
flags in force): only the structure (sequence, alternation, repetition, anchors) is ours. What a Pike VM cannot
match (backreferences, lookaround, atomic groups, possessive quantifiers, conditionals) raises :class:`Unsupported`
with the reason, and so does a pattern whose counted repeats unroll past ``MAX_INSTRUCTIONS``.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache

MAX_INSTRUCTIONS = 20_000  # after unrolling {m,n}: a host or namespace regex needs a few hundred at most

_FLAGS = {"i": re.IGNORECASE, "s": re.DOTALL, "m": re.MULTILINE, "x": re.VERBOSE, "a": re.ASCII, "u": 0, "L": 0}
_ASSERTIONS = {"A": "begin", "Z": "end", "b": "boundary", "B": "not_boundary"}
_HEX_LENGTH = {"x": 2, "u": 4, "U": 8}
_REFUSED_GROUPS = {"=": "a lookaround", "!": "a lookaround", "<": "a lookaround", "P": "a backreference",
                   ">": "an atomic group", "(": "a conditional group"}  # what follows "(?"
_OCTAL = "01234567"
_WHITESPACE = " \t\n\r\v\f"  # what verbose mode skips (re's WHITESPACE, not str.isspace)
_BOUNDS = re.compile(r"(\d*)(,?)(\d*)\}")
_GLOBAL_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")


class Unsupported(ValueError):
    """A valid regex this matcher refuses (it would need backtracking), with the reason."""


class _Parser:
    """Recursive descent over Python's regex syntax, read the way ``re`` reads it. ``re.compile`` has accepted the
    pattern first, so only what it accepts has to be read right."""

    def __init__(self, pattern: str):
        self.p, self.i = pattern, 0

    def peek(self, n: int = 1) -> str:
        return self.p[self.i:self.i + n]

    def take(self, n: int = 1) -> str:
        self.i += n
        return self.p[self.i - n:self.i]

    def alternation(self, flags: int):
        branches = [self.sequence(flags)]
        while self.peek() == "|":
            self.take()
            branches.append(self.sequence(flags))
        return ("alt", branches)

    def sequence(self, flags: int):
        items = []
        while self.i < len(self.p) and self.peek() not in "|)":
            c = self.take()
            if flags & re.VERBOSE and c in _WHITESPACE:
                continue
            if flags & re.VERBOSE and c == "#":
                while self.i < len(self.p) and self.take() != "\n":
                    pass
                continue
            bounds = self.repeat(c)
            if bounds is not None:
                if self.peek() == "+":
                    raise Unsupported("a possessive quantifier")
                if self.peek() == "?":
                    self.take()  # lazy: the same whole strings match
                items[-1] = ("rep", items[-1], *bounds)
            elif c == "(":
                group = self.group(flags)
                if group is not None:
                    items.append(group)
            else:
                items.append(self.atom(c, flags))
        return ("cat", items)

    def repeat(self, c: str):
        if c in "*+?":
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        m = _BOUNDS.match(self.p, self.i) if c == "{" else None
        if not m or m[0] == "}":
            return None  # a literal "{"
        self.i = m.end()
        return int(m[1] or 0), (int(m[3]) if m[3] else None) if m[2] else int(m[1])

    def group(self, flags: int):
        if self.peek() != "?":
            return self.closed(flags)
        c = self.take(2)[1]
        if c == "P" and self.peek() == "<":
            self.i = self.p.index(">", self.i) + 1
            return self.closed(flags)
        if c == "#":
            self.i = self.p.index(")", self.i) + 1
            return None
        if c in _REFUSED_GROUPS:
            raise Unsupported(_REFUSED_GROUPS[c])
        self.i -= 1
        on, _, off = self.p[self.i:self.p.index(":", self.i)].partition("-")
        self.i += len(on) + bool(off) + len(off) + 1
        for f in on:
            flags |= _FLAGS[f]
        for f in off:
            flags &= ~_FLAGS[f]
        return self.closed(flags)

    def closed(self, flags: int):
        node = self.alternation(flags)
        self.take()  # ")"
        return node

    def atom(self, c: str, flags: int):
        if c == "^":
            return ("assert", "line_start" if flags & re.MULTILINE else "begin", flags)
        if c == "$":
            return ("assert", "line_end" if flags & re.MULTILINE else "end_or_newline", flags)
        if c == "[":
            start = self.i - 1
            self.i += self.peek() == "^"
            self.i += self.peek() == "]"  # "[]" and "[^]" open a set holding "]"
            while (d := self.take()) != "]":
                self.i += d == "\\"
            return ("char", _char(self.p[start:self.i], flags))
        if c != "\\":
            return ("char", _char(c if c == "." else re.escape(c), flags))
        start, e = self.i - 1, self.take()
        if e in _ASSERTIONS:
            return ("assert", _ASSERTIONS[e], flags)
        if e == "0":  # \0, \0o, \0oo
            while self.i - start < 4 and self.peek() and self.peek() in _OCTAL:
                self.take()
        elif e.isdigit():  # three octal digits are a character, anything else a group's number
            if not (e in _OCTAL and len(self.peek(2)) == 2 and all(d in _OCTAL for d in self.peek(2))):
                raise Unsupported("a backreference")
            self.take(2)
        elif e in _HEX_LENGTH:
            self.take(_HEX_LENGTH[e])
        elif e == "N":  # \N{NAME}
            self.i = self.p.index("}", self.i) + 1
        return ("char", _char(self.p[start:self.i], flags))


@lru_cache(maxsize=4096)
def _char(source: str, flags: int):
    """One character's test, as ``re`` reads ``source`` under ``flags`` (``x`` and ``m`` do not change it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "possible nested set" for "[[": re reads it literally
        return re.compile(source, flags & (re.IGNORECASE | re.DOTALL | re.ASCII)).fullmatch


def _emit(node, prog: list) -> None:
    """Thompson's construction: ``("char", test)``, ``("split", x, y)``, ``("jmp", x)``, ``("assert", kind, flags)``."""
    kind = node[0]
    if kind in ("char", "assert"):
        prog.append(node)
    elif kind == "cat":
        for item in node[1]:
            _emit(item, prog)
    elif kind == "alt":
        jumps = []
        for branch in node[1][:-1]:
            split = len(prog)
            prog.append(None)
            _emit(branch, prog)
            jumps.append(len(prog))
            prog.append(None)
            prog[split] = ("split", split + 1, len(prog))
        _emit(node[1][-1], prog)
        for j in jumps:
            prog[j] = ("jmp", len(prog))
    else:
        _repeat(node[1], node[2], node[3], prog)
    if len(prog) > MAX_INSTRUCTIONS:
        raise Unsupported(f"over {MAX_INSTRUCTIONS:,} instructions once its counted repeats are unrolled")


def _repeat(body, lo: int, hi: int | None, prog: list) -> None:
    start = len(prog)
    _emit(body, prog)
    size = len(prog) - start
    if size == 0:
        return  # an empty body repeated is empty
    if start + size * (lo + (hi - lo if hi is not None else 1)) + 2 > MAX_INSTRUCTIONS:
        raise Unsupported(f"over {MAX_INSTRUCTIONS:,} instructions once its counted repeats are unrolled")
    del prog[start:]
    for _ in range(lo):
        _emit(body, prog)
    if hi is None:
        split = len(prog)
        prog.append(None)
        _emit(body, prog)
        prog.append(("jmp", split))
        prog[split] = ("split", split + 1, len(prog))
        return
    splits = []
    for _ in range(hi - lo):
        splits.append(len(prog))
        prog.append(None)
        _emit(body, prog)
    for s in splits:
        prog[s] = ("split", s + 1, len(prog))


@lru_cache(maxsize=1024)
def compile_whole(pattern: str) -> tuple:
    """``pattern`` as a Pike VM program. Raises ``re.error`` where ``re.compile`` does, and :class:`Unsupported`
    for a valid pattern that needs backtracking."""
    re.compile(pattern)
    parser, flags = _Parser(pattern), 0
    while m := _GLOBAL_FLAGS.match(pattern, parser.i):  # (?aiLmsux) at the start: the whole pattern's flags
        flags |= sum(_FLAGS[f] for f in m[1])
        parser.i = m.end()
    prog = []
    try:
        _emit(parser.alternation(flags), prog)
    except RecursionError:
        raise Unsupported("groups nested too deeply") from None
    return tuple(prog) + (("match",),)


def _holds(kind: str, flags: int, s: str, pos: int) -> bool:
    n = len(s)
    if kind in ("boundary", "not_boundary"):
        if n == 0:
            return False  # re: neither \b nor \B matches in an empty string
        word = _char(r"\w", flags & re.ASCII)
        edge = (pos > 0 and word(s[pos - 1]) is not None) != (pos < n and word(s[pos]) is not None)
        return edge == (kind == "boundary")
    if kind == "begin":
        return pos == 0
    if kind == "end":
        return pos == n
    if kind == "end_or_newline":
        return pos == n or (pos == n - 1 and s[pos] == "\n")
    if kind == "line_start":
        return pos == 0 or s[pos - 1] == "\n"
    return pos == n or s[pos] == "\n"  # line_end


def _closure(prog: tuple, starts: list, s: str, pos: int) -> tuple[list, bool]:
    """The character steps reachable from ``starts`` without consuming a character, and whether MATCH is."""
    seen, chars, matched, stack = set(), [], False, starts[::-1]
    while stack:
        pc = stack.pop()
        if pc in seen:
            continue
        seen.add(pc)
        op = prog[pc]
        if op[0] == "char":
            chars.append(pc)
        elif op[0] == "split":
            stack += (op[2], op[1])
        elif op[0] == "jmp":
            stack.append(op[1])
        elif op[0] == "assert":
            if _holds(op[1], op[2], s, pos):
                stack.append(pc + 1)
        else:
            matched = True
    return chars, matched


def _matches(prog: tuple, subject: str) -> bool:
    chars, matched = _closure(prog, [0], subject, 0)
    for pos, c in enumerate(subject):
        chars, matched = _closure(prog, [pc + 1 for pc in chars if prog[pc][1](c) is not None], subject, pos + 1)
        if not chars and not matched:
            return False
    return matched


@lru_cache(maxsize=256)
def compile_all(patterns: tuple[str, ...]) -> tuple:
    """Each of ``patterns`` compiled (cached: a policy's lists come back with every snapshot); an error names the
    pattern it is about."""
    programs = []
    for p in patterns:
        try:
            programs.append(compile_whole(p))
        except (Unsupported, re.error) as exc:
            raise type(exc)(f"{p[:80]!r}: {exc}") from None
    return tuple(programs)


@lru_cache(maxsize=65_536)
def fullmatch_any(patterns: tuple[str, ...], subject: str) -> bool:
    """Whether one of ``patterns`` matches all of ``subject`` (``re.fullmatch`` of any; a policy's list, as Pulsar's
    ``anyMatch``), in steps linear in ``len(subject)``. Cached: a policy comes back with every snapshot."""
    return any(_matches(prog, subject) for prog in compile_all(patterns))
