"""How many cycles a what-if runs "as if the snapshot's load were sustained": as many as Pulsar's debounce needs
before it acts (its hit-count thresholds), at least one, and at most a day of one-minute cycles. A threshold of
2,147,483,647 once had ``whatif shed`` loop for billions of cycles; a negative one ran none (Pulsar acts at the
first cycle: ``++hitCount > threshold``)."""

from __future__ import annotations

MAX_CYCLES = 1440  # a day of one-minute cycles


def sustained_cycles(needed: int, setting: str, notes: list[str]) -> int:
    """``needed`` cycles (``setting`` names the threshold that asks for them), at least 1; past ``MAX_CYCLES`` the
    what-if runs that many and says so in ``notes``."""
    if needed > MAX_CYCLES:
        notes.append(f"{setting} asks for {needed:,} cycles of sustained load before Pulsar acts; the what-if ran "
                     f"{MAX_CYCLES:,} (a day of one-minute cycles)")
        return MAX_CYCLES
    return max(1, needed)
