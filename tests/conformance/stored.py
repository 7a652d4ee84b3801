"""Pulsar's stored answers (``tests/conformance/data``) and the inputs they answer, regenerated from the case ids."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.conformance.regenerate import digest

DATA = Path(__file__).parent / "data"


def answers(name: str) -> list[dict]:
    with gzip.open(DATA / f"{name}.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def regenerate(row: dict, make) -> dict:
    case = make(int(row["case"].rsplit("-", 1)[1]))
    assert digest(case) == row["input"], f"{row['case']}: the generator changed; run `make conformance`"
    return case
