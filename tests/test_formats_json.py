"""A snapshot file's bytes → one JSON document or a ``FileProblem`` naming why not (``formats.values.load_json``):
no content makes it raise anything else, and what it reads it reads to the values Python's json reads."""

import gzip
import io
import json
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lb_pipeline.formats.values import FileProblem, load_json


def _zipped(content: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("topics.json", content)
    return out.getvalue()


@pytest.mark.parametrize("content, why", [
    (b"\xff{}", "UTF-8 text, got invalid byte at offset 0"),
    # byte order marks, named: Pulsar never writes one; PowerShell's ">" writes UTF-16 with one, Notepad UTF-8 with one
    ("{}".encode("utf-16"), "got a UTF-16 LE byte order mark"),
    (b"\xfe\xff\x00{\x00}", "got a UTF-16 BE byte order mark"),
    ("{}".encode("utf-32"), "got a UTF-32 LE byte order mark"),
    (b"\xef\xbb\xbf{}", "got a UTF-8 byte order mark"),
    # compressed or archived data under a .json name, named (zip's first bytes are ASCII: "offset 14" said nothing)
    (gzip.compress(b"{}", mtime=0), "got gzip-compressed data"),
    (_zipped(b"{}"), "got a zip archive"),
    (b"\x28\xb5\x2f\xfd" + bytes(8), "got zstd-compressed data"),
    (b"BZh91AY&SY", "got bzip2-compressed data"),
    (b"\xfd7zXZ\x00" + bytes(8), "got xz-compressed data"),
    (b"   \n", "empty"),
    (b'{"a": 1', "valid JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "nested at most 64"),
    (b'{"a":' * 5_000 + b"1" + b"}" * 5_000, "nested at most 64"),
    (b'{"a": NaN}', "non-JSON literal NaN"),
    (b'{"a": -Infinity}', "non-JSON literal -Infinity"),
    (b'{"a": 1, "a": 2}', "each key once"),
    (b'{"a": ' + b"9" * 5_000 + b"}", "parseable JSON"),  # Python refuses int literals over 4,300 digits
])
def test_bad_content_is_a_file_problem_never_another_exception(content, why):
    with pytest.raises(FileProblem) as caught:
        load_json(content)
    assert why in caught.value.problem.reason and caught.value.problem.whole_file


def _json_reads(content: bytes):
    """What Python's json (the reference, and the fallback that names every problem) makes of ``content``."""
    from lb_pipeline.formats.values import _reject_constant, _unique_keys

    return json.loads(content.decode("utf-8"), parse_constant=_reject_constant, object_pairs_hook=_unique_keys)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_JSON, st.booleans(), st.sampled_from([None, 1, "\t"]))
def test_a_document_reads_to_the_values_json_reads_it_to(value, ascii_only, indent):
    content = json.dumps(value, ensure_ascii=ascii_only, indent=indent).encode()
    got, expected = load_json(content), _json_reads(content)
    assert got == expected and json.dumps(got) == json.dumps(expected)  # -0.0, int against float, key order


@pytest.mark.parametrize("content", [
    b"1e400", b"[-1E400, 1e-400, -0, -0.0, 0e0, 1.0E7, 4.9e-324, 1.7976931348623157e308]",
    b"[123456789012345678901234567890, -9223372036854775809, 0.1000000000000000055511151231257827]",
    b"1" + b"0" * 4299, b'["\\ud83d\\ude00", "\\udbff\\udfff", "\\u0000", "\\/", "\x7f", ""]', b' \t\r\n{"": 1}\n ',
    b'"\\ud800"', b'["\\udc00x", "\\ud800\\u0041"]',  # lone surrogates: json reads them, encodable_rows refuses them
])
def test_edge_values_read_as_json_reads_them(content):
    assert json.dumps(load_json(content)) == json.dumps(_json_reads(content))


def test_a_valid_document_is_read_without_jsons_slower_parse(monkeypatch):
    """The fast reader is in use (a silent fallback for every file would double bronze's parse time)."""
    from lb_pipeline.formats import values

    class Refusing:  # json as values.py sees it (the json module itself stays: the background nights' threads use it)
        JSONDecodeError = json.JSONDecodeError

        @staticmethod
        def loads(*_, **__):
            raise AssertionError("json's parse ran for a valid document")

    monkeypatch.setattr(values, "json", Refusing)
    assert load_json(b'{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    with pytest.raises(AssertionError, match="json's parse ran"):  # refused: json names the problem
        load_json(b'{"a": 1, "a": 2}')


def test_the_recursion_limit_is_a_file_problem_when_the_depth_limit_is_lifted():
    with pytest.raises(FileProblem, match="deeper nesting"):
        load_json(b"[" * 100_000 + b"]" * 100_000, max_depth=10**9)


def test_the_depth_limit_follows_the_environment_and_ignores_brackets_in_strings(monkeypatch):
    doc = b'{"a": {"b": {"c": "[[[[[[[[[[{{{{{{{"}}}'
    assert load_json(doc, max_depth=3) == {"a": {"b": {"c": "[[[[[[[[[[{{{{{{{"}}}
    monkeypatch.setenv("LB_MAX_JSON_DEPTH", "2")
    with pytest.raises(FileProblem, match="at most 2 levels"):
        load_json(doc)


def test_a_key_repeated_under_an_escaped_spelling_quarantines_the_whole_file_naming_the_key():
    """``"msgRate\\u0049n"`` is ``msgRateIn`` once read: a second value for the field under another spelling (which a
    byte comparison of keys misses) is ambiguous, so the file waits in the quarantine, raw text kept."""
    from lb_pipeline.ingest.files import parse_file
    from lb_pipeline.ingest.tables import TABLES

    content = (b'{"t/ns": {"0x00000000_0xffffffff": {"persistent": {"persistent://t/ns/a": {"msgRateIn": 1, '
               b'"msgRateOut": 1, "msgThroughputIn": 1, "msgThroughputOut": 1, "msgRate\\u0049n": 9000}}}}}')
    good, bad = parse_file(TABLES["topic_stats"], "file:/l/c/2026-01-15T00-00-00Z/topics/b_8080.json", content)
    assert good == [] and [(q["field"], q["raw"]) for q in bad] == [("msgRateIn", content.decode())]
    assert "each key once" in bad[0]["reason"]
