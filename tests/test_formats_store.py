"""What the metadata store holds for a bundle, as the parsers read it: the leader's ``BundleData`` (its windows) and the
``ResourceQuota`` an admin set."""

import pytest

from lb_pipeline.formats import brokers


@pytest.mark.parametrize("window, samples, field, reason", [
    ("longTermData", {"numSamples": 5000, "maxSamples": 1000}, "longTermData.numSamples",
     "expected at most maxSamples (1000) samples, got 5000"),
    ("shortTermData", {"numSamples": 0, "maxSamples": 0}, "shortTermData.maxSamples",
     "expected a window of one sample or more, got 0"),
])
def test_bundle_data_with_more_samples_than_its_window_or_no_window_is_a_row_problem(window, samples, field, reason):
    """Pulsar's TimeAverageMessageData.update keeps numSamples <= maxSamples and divides by numSamples."""
    rates = {"msgRateIn": 1.0, "msgRateOut": 0.0, "msgThroughputIn": 1.0, "msgThroughputOut": 0.0}
    doc = {"shortTermData": {**rates, "numSamples": 10, "maxSamples": 10},
           "longTermData": {**rates, "numSamples": 1000, "maxSamples": 1000}}
    rows, problems = brokers.parse_bundle_data(doc, "a/b/0x00000000_0xffffffff")
    assert len(rows) == 1 and not problems  # full windows land
    doc[window].update(samples)
    rows, problems = brokers.parse_bundle_data(doc, "a/b/0x00000000_0xffffffff")
    assert rows == [] and [(p.field, p.reason) for p in problems] == [(field, reason)]


def test_a_resource_quota_reads_as_jackson_reads_it_and_a_negative_rate_is_a_row_problem():
    """``ResourceQuota``: a field the JSON lacks is the class's default (0, ``dynamic`` true)."""
    bundle = "t/ns/0x00000000_0x40000000"
    (row,), problems = brokers.parse_resource_quota({"msgRateIn": 400, "bandwidthOut": 1.5e6, "dynamic": "false"},
                                                    bundle)
    assert not problems and row["namespace"] == "t/ns" and row["bundle_range"] == "0x00000000_0x40000000"
    assert (row["msg_rate_in"], row["msg_rate_out"], row["bandwidth_in"], row["bandwidth_out"], row["memory"],
            row["dynamic"]) == (400.0, 0.0, 0.0, 1.5e6, 0.0, False)
    assert brokers.parse_resource_quota({}, bundle)[0][0]["dynamic"] is True
    rows, (problem,) = brokers.parse_resource_quota({"msgRateOut": -5}, bundle)
    assert not rows and problem.field == "msgRateOut" and ">= 0" in problem.reason
