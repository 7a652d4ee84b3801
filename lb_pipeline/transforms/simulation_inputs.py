"""What one cluster's rows in a simulation slot (``simulation.simulate_runs``, by ``kind``) hold for the runs and the
validation: the leader's logged events, the bundles' arrivals in the report writes, the leader's averages."""

from __future__ import annotations

import pandas as pd

from lb_pipeline.simulation.arrivals import Arrival
from lb_pipeline.simulation.history import TRAFFIC
from lb_pipeline.simulation.leader_averages import COLUMNS as AVERAGE_COLUMNS, with_replayed, written_at


def events_of(pdf: pd.DataFrame) -> list[dict] | None:
    """The leader's logged events of the cluster (``bronze/lb_events``); None where no log was collected."""
    events = pdf[pdf["kind"] == "event"]
    return None if events.empty else [
        {"kind": e.event, "event_ts": e.event_ts, "bundle": e.bundle, "from_broker": e.from_broker,
         "to_broker": e.to_broker, "detail": getattr(e, "detail", None)} for e in events.itertuples(index=False)]


def arrivals_of(pdf: pd.DataFrame) -> list[Arrival]:
    """The bundles' arrivals on a new owner in the cluster's report writes (``transforms.arrivals``), in time order."""
    if "restarted" not in pdf.columns:
        return []
    rows = pdf[pdf["kind"] == "arrival"]
    return sorted((Arrival(int(r.write_ms), r.bundle, r.broker, tuple(float(getattr(r, c)) for c in TRAFFIC),
                           bool(r.restarted)) for r in rows.itertuples(index=False)), key=lambda a: (a.t, a.bundle))


def leader_rows(pdf: pd.DataFrame) -> tuple[pd.DataFrame, dict[int, int]]:
    """The leader's stored ``BundleData`` rows of the cluster, its averages replayed from every report write in
    their place where they were (``with_replayed``), and per snapshot (epoch ms) when it wrote them (none where
    ``simulate_runs`` was given neither)."""
    if set(AVERAGE_COLUMNS) <= set(pdf.columns):
        averages = with_replayed(pdf.loc[pdf["kind"] == "average", list(AVERAGE_COLUMNS)],
                                 pdf.loc[pdf["kind"] == "replayed", list(AVERAGE_COLUMNS)])
    else:
        averages = pd.DataFrame(columns=list(AVERAGE_COLUMNS))
    if "bundle_data_written_ms" not in pdf.columns:
        return averages, {}
    return averages, written_at(pdf.loc[pdf["kind"] == "written"])
