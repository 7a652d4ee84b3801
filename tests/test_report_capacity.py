"""The report's "Capacity" section (no Spark): the forecast charts, the loss verdict and table with what each figure
means, the peers' reach, brokers that share a host, and a loss no number of brokers survives."""

from lb_pipeline.report.render import render_nightly
from tests.test_report import EVIL, _context


def _capacity(nights: int) -> dict:
    """A capacity context as ``report.planning`` builds it, with a forecast when ``nights`` >= 3."""
    enough = nights >= 3
    forecast = dict(forecast=[60.0 + i for i in range(30)], forecast_low=[55.0 + i for i in range(30)],
                    forecast_high=[65.0 + i for i in range(30)]) if enough else dict(forecast=[], forecast_low=[], forecast_high=[])
    head = {"subject": f"c{EVIL}", "status": "ok" if enough else "not enough history", "method": "trend + daily",
            "history_days": nights, "current_peak": 59.0, "trend_per_day": 1.0, "threshold": 85.0,
            "days_until_threshold": 26 if enough else None, "days_until_threshold_earliest": 20 if enough else None,
            "days_until_threshold_latest": 35 if enough else None, "daily_peaks": [50.0 + i for i in range(nights)],
            **forecast}
    loss = {"subject": "largest broker", "resource": "cpu", "lost_brokers": [f"b{EVIL}"], "usage_after_loss": 90.0,
            "headroom": -5.0, "brokers_to_add": 1, "brokers_to_add_in_30_days": 3}
    return {"headline": head, "cluster": [head], "domains": [{**head, "subject": f"zone-{EVIL}"}] if enough else [],
            "soonest": [{**head, "subject": f"b{EVIL}"}] if enough else [], "losses": [loss], "add_now": 1,
            "add_later": 3, "unsizable": None, "namespaces": [], "nights": nights, "enough": enough,
            "trend": [(d - nights + 1, v) for d, v in enumerate(head["daily_peaks"])]}


def test_capacity_shows_a_forecast_chart_per_domain_with_enough_nights_and_says_so_without():
    html = render_nightly(_context(capacity=_capacity(10)))
    section = html.split('data-testid="capacity"')[1].split("</section>")[0]
    assert section.count('data-testid="capacity-chart"') == 2 and section.count("<polygon") == 2
    assert "in <b>26 days</b> (between 20 and 35)" in section and "Add 1 broker(s)" in section
    assert EVIL not in html and "&lt;script&gt;" in section
    thin = render_nightly(_context(capacity=_capacity(1))).split('data-testid="capacity"')[1].split("</section>")[0]
    assert "Not enough history" in thin and "capacity-chart" not in thin and 'data-testid="loss-table"' in thin


def _gold_headline() -> dict:
    """``_capacity``'s headline as a gold/capacity_forecast row of the cluster's max usage."""
    from lb_pipeline.transforms.capacity import _COLUMNS

    return {**dict.fromkeys(_COLUMNS), **{k: v for k, v in _capacity(10)["headline"].items() if k in _COLUMNS},
            "scope": "cluster", "subject": "c", "resource": "max_usage"}


def _capacity_of(rows: list[dict]) -> dict:
    """``report.planning.capacity_context`` on gold rows given as dicts."""
    from lb_pipeline.report.planning import capacity_context

    class Row(dict):
        def asDict(self, recursive=False):
            return dict(self)

    return capacity_context(type("Df", (), {"collect": lambda self: [Row(r) for r in rows]})())


def test_a_band_widened_to_the_peers_reach_is_said_under_the_chart_and_the_brokers_table():
    head = _gold_headline()
    note = "band reaches -20/+45 points, how far the other domains' daily peaks stood from this one's"
    rows = [head, {**head, "scope": "domain", "subject": "zone-a", "note": note},
            {**head, "scope": "broker", "subject": "b1", "note": "band reaches -1/+60 points"},
            {**head, "scope": "broker", "subject": "b2"}]
    cap = _capacity_of(rows)
    assert cap["reached"] == 1
    section = render_nightly(_context(capacity=cap)).split('data-testid="capacity"')[1].split("</section>")[0]
    assert f"zone-a ({note})</figcaption>" in section.replace("&#39;", "'")
    said = section.split('data-testid="broker-band-note">')[1].split("</p>")[0]
    assert said.startswith("1 of these brokers' 5–95 % bands") and "last 7 nights" in said
    plain = render_nightly(_context(capacity=_capacity(10)))
    assert "broker-band-note" not in plain and "band reaches" not in plain
    young = _capacity_of([{**r, "history_days": 3} for r in rows])  # fewer nights than the reach looks back
    assert "over the last 3 nights:" in render_nightly(_context(capacity=young))


def test_brokers_sharing_a_host_get_no_loss_verdict_and_no_brokers_to_add():
    from lb_pipeline.transforms.capacity import _COLUMNS

    head = _gold_headline()
    loss = {**dict.fromkeys(_COLUMNS), "scope": "loss", "subject": "largest broker", "resource": "cpu",
            "lost_brokers": ["127.0.0.1:8081"], "usage_after_loss": 120.0, "headroom": -35.0, "threshold": 85.0,
            "brokers_to_add": 3, "brokers_to_add_in_30_days": 4, "method": "x", "note": "n"}
    brokers = [{**head, "scope": "broker", "subject": f"127.0.0.1:{p}"} for p in (8080, 8081)]
    cap = _capacity_of([head, loss, *brokers])
    assert cap["add_now"] == cap["add_later"] == 0 and cap["losses"] == []
    section = render_nightly(_context(capacity=cap)).split('data-testid="capacity"')[1].split("</section>")[0]
    said = section.split('data-testid="no-capacity-advice">')[1].split("</p>")[0]
    assert said.startswith("No loss headroom and no brokers to add from these figures: 127.0.0.1:8080, "
                           "127.0.0.1:8081 on 127.0.0.1 share a host")
    assert "loss-table" not in section and "loss-verdict" not in section and "Add 3" not in section
    apart = [{**b, "subject": f"10.0.0.{k}:8080"} for k, b in enumerate(brokers)]
    cap = _capacity_of([head, loss, *apart])
    assert cap["add_now"] == 3 and not cap["shared"]


def test_the_clusters_peak_is_defined_where_it_is_shown_beside_its_brokers_and_its_capacity_ratio():
    """The cluster's daily peak of max usage is a mean of percentages: tonight 50.3 % while three brokers peaked at
    100 %. The headline says what the figure is, how many brokers reached the threshold, and the busiest resource as
    a share of the cluster's capacity (heap left out: it does not follow the bundles)."""
    head = {**_gold_headline(), "current_peak": 50.3}
    rows = [head, {**head, "resource": "cpu", "current_peak": 61.0}, {**head, "resource": "memory", "current_peak": 90.0},
            *[{**head, "scope": "broker", "subject": f"b{k}", "current_peak": peak}
              for k, peak in ((2, 100.0), (10, 20.0), (1, 100.0), (3, 100.0))]]
    html = render_nightly(_context(capacity=_capacity_of(rows)))
    said = " ".join(html.split('data-testid="capacity-definition">')[1].split("</span>")[0].split())
    assert "is 50.3 % and moves" in html
    assert said == ("That figure is the mean over its brokers of each one's highest resource use, in percent of that "
                    "broker's own capacity; tonight 3 of its 4 brokers peaked at or above the threshold, the highest "
                    "(b1) at 100.0 %; as a share of the cluster's capacity (Σ usage / Σ capacity), its busiest "
                    "resource, cpu, peaked at 61.0 %.")
    assert "capacity-definition" not in render_nightly(_context(capacity=_capacity(10)))


def test_a_one_broker_cluster_is_told_it_survives_no_loss_instead_of_an_empty_loss_table():
    one = {**_capacity(1), "losses": [], "add_now": 0, "add_later": 0}
    html = render_nightly(_context(capacity=one, broker_count=1, snapshot_count=1))
    (note,) = html.split('data-testid="no-loss">')[1:]
    assert note.startswith("The cluster has one broker: losing it stops every topic") and "to add so that the cluster " \
        "survives losing one: 1 (tonight's peak, 59.0 %, must fit under the 85 % threshold" in note
    assert 'data-testid="loss-table"' not in html and "1 snapshot, 1 broker at the last one" in html
    zero = {**one, "headline": {**one["headline"], "threshold": 0.0}}  # a threshold of 0 is a value Pulsar takes
    assert "no survivor is left to size.</p>" in render_nightly(_context(capacity=zero, broker_count=1))
    many = render_nightly(_context(capacity=one, broker_count=3))
    assert "no broker reported a capacity" in many and "survives each loss" not in many


def test_a_loss_no_number_of_brokers_survives_is_not_told_it_survives():
    """``loadBalancerBrokerOverloadedThresholdPercentage=0``: every loss is above the threshold and has no brokers to
    add (it divided by zero before); the verdict said "the cluster survives each loss"."""
    loss = {"subject": "largest broker", "resource": "cpu", "lost_brokers": ["b1"], "usage_after_loss": 40.3,
            "headroom": -40.3, "brokers_to_add": None, "brokers_to_add_in_30_days": None, "threshold": 0.0}
    cap = {**_capacity(1), "losses": [loss], "add_now": 0, "add_later": 0, "unsizable": loss}
    html = render_nightly(_context(capacity=cap, broker_count=3))
    verdict = html.split('data-testid="loss-verdict">')[1].split("</p>")[0]
    assert "No number of brokers keeps the survivors under the threshold" in verdict and "survives" not in verdict
    assert "loadBalancerBrokerOverloadedThresholdPercentage=0" in verdict
    assert ">None<" not in html.split('data-testid="loss-table"')[1].split("</table>")[0]


def test_a_loss_no_broker_of_the_clusters_size_can_carry_names_the_topic_and_says_how_it_was_sized():
    from lb_pipeline.planning.bundle_loss import METHOD, TOO_BIG
    from lb_pipeline.transforms.capacity import _COLUMNS

    note = (f"at 2026-01-15 12:00 UTC; the hottest survivor once whole bundles are spread as evenly as they can be; "
            f"an even spread of the load would give 113.3 %; {TOO_BIG}: the hottest topic of t/hot/0x0_0x1{EVIL} alone "
            "needs 90 % of one (partition the topic, or a larger broker)")
    loss = {**dict.fromkeys(_COLUMNS), "scope": "loss", "subject": "largest broker", "resource": "cpu",
            "lost_brokers": ["b0"], "usage_after_loss": 116.0, "headroom": -31.0, "threshold": 85.0,
            "method": METHOD, "note": note}

    calm = {**loss, "resource": "bandwidth_in", "usage_after_loss": 5.0, "headroom": 80.0, "brokers_to_add": 0,
            "note": "at 2026-01-15 12:00 UTC; an even spread of the load would give 4.0 %"}  # listed first
    cap = _capacity_of([calm, loss])
    html = render_nightly(_context(capacity=cap, broker_count=4))
    verdict = html.split('data-testid="loss-verdict">')[1].split("</p>")[0]
    assert "No number of brokers keeps the survivors under the threshold" in verdict
    assert "the hottest topic of t/hot/0x0_0x1&lt;script&gt;" in verdict and "partition the topic" in verdict
    said = html.split('data-testid="loss-note">')[1].split("</p>")[0]
    assert said.startswith("Largest broker lost (cpu), at 2026-01-15 12:00 UTC; the hottest survivor")
    table = html.split('data-testid="loss-table"')[1].split("</table>")[0]
    assert "(load spread evenly)" not in table
    # where each loss was sized, and what "largest" and a domain's brokers mean there
    assert "<th>At (UTC)</th>" in table and table.count("<td>2026-01-15 12:00</td>") == 2
    assert "the largest broker is the one with the most capacity of that resource there" in html
