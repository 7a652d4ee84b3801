"""The capacity forecast scored on what came next: forecast from the first k nights of a fourteen-night generated
history, every k, against the daily peaks of the nights after (``transforms.forecast_backtest``)."""

import pytest

from lb_pipeline.transforms.forecast_backtest import backtest, coverage, landing_usage


@pytest.fixture(scope="module")
def scored(fortnight_landing):
    return backtest(landing_usage(fortnight_landing), threshold=85.0)


def test_every_scope_is_scored_on_every_night_after_the_third(scored):
    assert set(scored["scope"]) == {"broker", "domain", "cluster"}
    cluster = scored[scored["scope"] == "cluster"]
    # 14 nights, forecasts from the 3rd to the 13th: 11 + 10 + … + 1 outcomes
    assert len(cluster) == sum(range(1, 12))
    assert (cluster["ahead"] >= 1).all() and (cluster["forecast_night"] < cluster["night"]).all()


def test_nights_after_a_broker_was_added_or_removed_are_scored_apart(scored):
    # the generated history adds a broker on its fifth night and removes one on its eleventh
    first = scored[scored["forecast_night"] == "2026-01-17"]
    assert first.loc[first["night"] <= "2026-01-18", "same_brokers"].all()
    assert not first.loc[first["night"] >= "2026-01-19", "same_brokers"].any()


def test_the_band_holds_about_nine_of_ten_outcomes_of_brokers_and_domains(scored):
    """A broker's daily peak jumps with the bundles the balancer moves. Widened by what the series' own past
    forecasts missed, the band held 67-74 % of broker outcomes; reaching the peaks the other brokers (domains) had
    over the last nights too, it holds 97 % of them here and 98 % of the domains' (0.91 and 0.96 over docs/capacity.md's
    three 24-snapshot histories). The cluster's band is its own (73 % here: the nights after a broker is added or
    removed are a cluster its history did not show)."""
    c = coverage(scored).set_index(["scope", "brokers"])
    assert c.loc[("broker", "all nights"), "inside"] >= 0.85
    assert c.loc[("domain", "all nights"), "inside"] >= 0.85
    assert c.loc[("cluster", "all nights"), "inside"] >= 0.7
    assert c.loc[("cluster", "all nights"), "median_width"] < 40  # the cluster's band stays its own
    broker = scored[scored["scope"] == "broker"]
    assert (broker["low"] >= 0).all() and (broker["high"] <= max(100.0, broker["actual"].max()) + 1e-9).all()
