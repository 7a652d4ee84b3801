"""The heatmap's rows at real size: hottest first, natural order on ties, calm brokers folded."""

from lb_pipeline.report.heat import heat_rows, natural_key

TIMES = ["00:00", "01:00"]


def _values(usages: dict[str, tuple[float, float]]) -> dict:
    return {(b, t): v for b, pair in usages.items() for t, v in zip(TIMES, pair)}


def test_names_sort_naturally():
    assert sorted(["broker-10", "broker-2", "broker-100", "broker-1"], key=natural_key) == \
        ["broker-1", "broker-2", "broker-10", "broker-100"]


def test_rows_run_hottest_first_and_ties_in_natural_order():
    rows = heat_rows(_values({"broker-10": (0.5, 0.4), "broker-2": (0.4, 0.5), "broker-1": (0.9, 0.2)}),
                     TIMES, overload=0.85, band=0.10)
    assert rows.hot == ["broker-1", "broker-2", "broker-10"] and rows.calm == []  # small clusters: nothing folded


def test_on_a_large_cluster_only_brokers_that_stay_in_the_band_are_folded():
    usages = {f"broker-{i}": (0.40, 0.42) for i in range(30)}
    usages["broker-7"] = (0.40, 0.90)  # overloaded once
    usages["broker-12"] = (0.60, 0.41)  # 20 points above the mean once: outside ThresholdShedder's band
    usages["broker-3"] = (None, 0.41)  # no report at 00:00: judged on what it reported
    rows = heat_rows(_values(usages), TIMES, overload=0.85, band=0.10)
    assert rows.hot == ["broker-7", "broker-12"]
    assert len(rows.calm) == 28 and rows.calm[:2] == ["broker-0", "broker-1"] and "broker-3" in rows.calm


def test_a_broker_that_never_reported_is_not_called_calm():
    usages = {f"broker-{i}": (0.40, 0.40) for i in range(25)}
    usages["broker-99"] = (None, None)
    rows = heat_rows(_values(usages), TIMES, overload=0.85, band=0.10)
    assert rows.hot == ["broker-99"] and len(rows.calm) == 25
