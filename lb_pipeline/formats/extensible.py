"""The extensible load manager's own files in a snapshot: ``lb/broker-load-data/<broker>.json`` (``BrokerLoadData``)
and ``lb/top-bundles/<broker>.json`` (``TopBundlesLoadData``). Ingest does not read them (the nightly replay derives
TransferShedder's inputs from the modular reports); ``whatif shed`` uses them when every broker has both, checked
here first: the numbers TransferShedder reads are finite numbers and each top bundle is a named bundle with stats.
A string where Pulsar writes a number had stopped the what-if with a traceback."""

from __future__ import annotations

from lb_pipeline.formats.values import FileProblem, RowProblem, _bundle_full_name, _kind, _obj, integer, num, text

# the BrokerLoadData and NamespaceBundleStats fields algorithms/shedding/transfer_shedder.py reads
_LOAD_NUMBERS = ("msgThroughputIn", "msgThroughputOut", "msgThroughputEMA", "weightedMaxEMA")
_STATS_NUMBERS = ("msgThroughputIn", "msgThroughputOut")


def check_broker_load_data(doc) -> dict:
    """The document, or a :class:`FileProblem` naming the first field TransferShedder could not read."""
    doc = _obj(doc, "(root)")
    try:
        for key in _LOAD_NUMBERS:
            num(doc, key, key, required=False)
        integer(doc, "updatedAt", "updatedAt", required=False)
    except RowProblem as exc:
        raise FileProblem(exc.problem.field, exc.problem.reason) from None
    return doc


def check_top_bundles(doc) -> list[dict]:
    """``topBundlesLoadData``, or a :class:`FileProblem` naming the first entry TransferShedder could not read."""
    tops = _obj(doc, "(root)").get("topBundlesLoadData") or []
    if not isinstance(tops, list):
        raise FileProblem("topBundlesLoadData", f"expected an array, got {_kind(tops)}")
    try:
        for i, entry in enumerate(tops):
            field = f"topBundlesLoadData[{i}]"
            entry = _obj(entry, field, row_level=True)
            _bundle_full_name(text(entry, "bundleName", f"{field}.bundleName"), f"{field}.bundleName")
            stats = _obj(entry.get("stats"), f"{field}.stats", row_level=True)
            for key in _STATS_NUMBERS:
                num(stats, key, f"{field}.stats.{key}", required=False)
    except RowProblem as exc:
        raise FileProblem(exc.problem.field, exc.problem.reason) from None
    return tops
