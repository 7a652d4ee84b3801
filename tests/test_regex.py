"""The isolation-policy matcher answers as ``re.fullmatch`` does, in steps linear in the name, and refuses what
only a backtracking engine can match."""

import random
import re

import pytest

from lb_pipeline.model import regex

ATOMS = ["a", "b", "A", "-", ".", r"\.", "[ab]", "[^a]", "[a-c]", "[]a]", "[^]]", r"\d", r"\w", r"\W", r"\s",
         r"\x61", r"\141", r"\0", r"\n", r"\N{DIGIT ONE}", "{", "}", "a{x}", "_"]
ASSERTIONS = ["^", "$", r"\b", r"\B", r"\A", r"\Z"]
QUANTIFIERS = ["*", "+", "?", "{2}", "{1,3}", "{,2}", "{2,}", "{,}", "{0}", "*?", "+?", "??", "{1,2}?"]
GROUPS = ["(", "(?:", "(?P<g{}>", "(?i:", "(?-i:", "(?s:", "(?m:", "(?x: ", "(?#note)("]


def _pattern(rnd: random.Random, depth: int = 0) -> str:
    r = rnd.random()
    if depth > 3 or r < 0.35:
        return rnd.choice(ATOMS) if rnd.random() < 0.85 else rnd.choice(ASSERTIONS)
    if r < 0.55:
        return "".join(_pattern(rnd, depth + 1) for _ in range(rnd.randint(1, 3)))
    if r < 0.7:
        return "|".join(_pattern(rnd, depth + 1) for _ in range(rnd.randint(2, 3)))
    if r < 0.85:
        return rnd.choice(GROUPS).format(rnd.randrange(10**9)) + _pattern(rnd, depth + 1) + ")"
    return "(" + _pattern(rnd, depth + 1) + ")" + rnd.choice(QUANTIFIERS)


def test_it_answers_as_re_fullmatch_on_random_patterns_and_names():
    rnd = random.Random(13)
    checked = matched = 0
    while checked < 40_000:
        pattern = rnd.choice(["", "", "(?i)", "(?s)", "(?m)", "(?a)", "(?x)", "(?i)(?s)"]) + _pattern(rnd)
        try:
            re.compile(pattern)
        except re.error:
            continue  # the generator makes some invalid ones (a quantifier after an anchor)
        for _ in range(8):
            subject = "".join(rnd.choice("abA-.1_\n {}x") for _ in range(rnd.randint(0, 7)))
            expected = re.fullmatch(pattern, subject) is not None
            assert regex.fullmatch_any((pattern,), subject) == expected, (pattern, subject)
            checked, matched = checked + 1, matched + expected
    assert matched > checked * 0.05  # the draws match often enough for the comparison to mean something


@pytest.mark.parametrize("pattern, subject, expected", [
    ("(a|a)*b", "a" * 10_000, False),  # 2^10000 paths for a backtracking engine
    ("(a|a)*b", "a" * 10_000 + "b", True),
    ("(a+)+$", "a" * 10_000 + "!", False),
    ("(.*)*x", "broker-0.pulsar.svc" * 500, False),
    ("(.|.|.|.|.|.)*x", "broker-0.pulsar.svc" * 500 + "x", True),
    ("(.*.*.*)*y", "tenant/ns" * 1_000, False),
])
def test_a_regex_that_backtracks_catastrophically_is_answered_at_once(pattern, subject, expected):
    # re.fullmatch does not return on the failing ones: exponential in the length; 40 characters already take hours
    assert regex.fullmatch_any((pattern,), subject) is expected


@pytest.mark.parametrize("pattern, reason", [
    (r"(a)\1", "a backreference"),
    (r"(?P<x>a)(?P=x)", "a backreference"),
    ("(?=a)a", "a lookaround"),
    ("(?<!b)a", "a lookaround"),
    ("(?>a)", "an atomic group"),
    ("a*+", "a possessive quantifier"),
    ("(a)(?(1)b|c)", "a conditional group"),
    ("a{30000}", "over 20,000 instructions"),
    ("((a{100}){100}){100}", "over 20,000 instructions"),
    ("(" * 400 + "a" + ")" * 400, "nested too deeply"),
])
def test_what_needs_a_backtracking_engine_is_refused_with_the_reason(pattern, reason):
    re.compile(pattern)  # valid for Python: refused only for how it would have to be matched
    with pytest.raises(regex.Unsupported, match=re.escape(reason)):
        regex.compile_whole(pattern)


def test_three_octal_digits_are_a_character_not_a_backreference():
    assert regex.fullmatch_any((r"\141\0",), "a\0") and regex.fullmatch_any((r"[\]]\x5d",), "]]")


def test_any_of_a_list_matches_and_an_error_names_the_pattern():
    assert regex.fullmatch_any(("broker-1", "broker-[2-4]"), "broker-3")
    assert not regex.fullmatch_any(("broker-1", "broker-[2-4]"), "broker-5")
    with pytest.raises(regex.Unsupported, match=re.escape("'(a)\\\\1': a backreference")):
        regex.compile_all(("ok", r"(a)\1"))


def test_an_invalid_pattern_raises_what_re_raises():
    with pytest.raises(re.error):
        regex.compile_whole("(unclosed")
