import json

import pytest

from lb_pipeline.snapshots.javajson import dumps, java_double


@pytest.mark.parametrize("value, text", [
    (1.0e7, "1.0E7"), (2.45972992e7, "2.45972992E7"), (1.67018496e7, "1.67018496E7"), (50.0, "50.0"),
    (14160.4, "14160.4"), (9999999.0, "9999999.0"), (0.001, "0.001"), (1e-4, "1.0E-4"), (-3.5e8, "-3.5E8"),
])
def test_doubles_are_written_like_java(value, text):
    assert java_double(value) == text


def test_output_is_valid_json_that_round_trips():
    doc = {"a": [1, 2.5e9, True, None, 'quote"d'], "b": {"c": 0.0}}
    assert json.loads(dumps(doc)) == doc


def test_nan_is_refused():
    with pytest.raises(ValueError):
        dumps({"x": float("nan")})
