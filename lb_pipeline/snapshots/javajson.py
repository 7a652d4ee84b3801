"""JSON as Pulsar's Jackson writes it: doubles in Java's ``Double.toString`` form (``50.0``, ``1.0E7``,
``2.45972992E7``), null fields left out by the caller. Any JSON parser reads it back."""

from __future__ import annotations

import math
from decimal import Decimal
from json.encoder import encode_basestring_ascii

import numpy as np


def java_double(x: float) -> str:
    if math.isnan(x) or math.isinf(x):
        raise ValueError("JSON has no NaN or Infinity")
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    a = abs(x)
    if 1e-3 <= a < 1e7:
        s = repr(float(x))
        return s if "e" not in s else format(x, "f")
    t = Decimal(repr(float(a))).as_tuple()
    digits = "".join(map(str, t.digits)).rstrip("0") or "0"
    exponent = len(t.digits) + t.exponent - 1
    return ("-" if x < 0 else "") + digits[0] + "." + (digits[1:] or "0") + "E" + str(exponent)


def dumps(value) -> str:
    parts: list[str] = []
    _encode(value, parts.append)
    return "".join(parts)


def _encode(v, out) -> None:
    if isinstance(v, str):
        out(encode_basestring_ascii(v))
    elif v is True:
        out("true")
    elif v is False:
        out("false")
    elif v is None:
        out("null")
    elif isinstance(v, (int, np.integer)):
        out(str(int(v)))
    elif isinstance(v, (float, np.floating)):
        out(java_double(float(v)))
    elif isinstance(v, dict):
        out("{")
        first = True
        for k, item in v.items():
            if not first:
                out(",")
            first = False
            out(encode_basestring_ascii(str(k)))
            out(":")
            _encode(item, out)
        out("}")
    elif isinstance(v, (list, tuple)):
        out("[")
        for i, item in enumerate(v):
            if i:
                out(",")
            _encode(item, out)
        out("]")
    else:
        raise TypeError(f"cannot encode {type(v).__name__} as JSON")
