from hypothesis import given
from hypothesis import strategies as st

from lb_pipeline.algorithms.time_average import update, update_loop, update_many


@given(st.integers(0, 1000), st.floats(0, 1e6), st.floats(0, 1e6), st.integers(0, 300), st.sampled_from([10, 1000]))
def test_closed_form_equals_pulsars_sample_by_sample_rule(n, avg, x, k, window):
    n = min(n, window)
    got_n, got = update(n, avg, x, k, window)
    want_n, want = update_loop(n, avg, x, k, window)
    assert got_n == want_n
    assert abs(got - want) <= 1e-9 * max(1.0, abs(want))


def test_first_sample_replaces_the_default_seed():
    assert update(0, 50.0, 1234.5, 1, 10) == (1, 1234.5)


def test_full_window_is_an_exponential_average():
    n, avg = update(10, 200.0, 100.0, 1, 10)
    assert (n, avg) == (10, 190.0)


@given(st.lists(st.tuples(st.integers(0, 1000), st.floats(0, 1e6), st.floats(0, 1e6), st.integers(0, 300)),
                min_size=1, max_size=20), st.sampled_from([10, 1000]))
def test_vectorised_update_equals_the_scalar_one(cases, window):
    import numpy as np

    n, avg, x, k = (np.array(c) for c in zip(*[(min(c[0], window), *c[1:]) for c in cases]))
    got_n, got = update_many(n, avg.astype(float), x.astype(float), k, window)
    for i in range(len(cases)):
        assert (int(got_n[i]), float(got[i])) == update(int(n[i]), float(avg[i]), float(x[i]), int(k[i]), window)


@given(st.lists(st.tuples(st.floats(0, 1e6), st.floats(0, 1e6)), min_size=1, max_size=20), st.integers(0, 1000),
       st.integers(0, 300), st.sampled_from([10, 1000]))
def test_vectorised_update_of_bundles_in_one_phase_equals_the_scalar_one(values, n, k, window):
    """Every bundle with the same samples so far and to come (the simulation's usual cycle) takes the shortcuts."""
    import numpy as np

    n = min(n, window)
    avg, x = (np.array(c, dtype=float) for c in zip(*values))
    got_n, got = update_many(np.full(len(values), n), avg, x, np.full(len(values), k), window)
    for i in range(len(values)):
        assert (int(got_n[i]), float(got[i])) == update(n, float(avg[i]), float(x[i]), k, window)


def test_a_billion_samples_cost_no_more_than_a_thousand():
    """A hostile cadence (loadBalancerSheddingIntervalMinutes of a billion) once built a billion decay factors."""
    import numpy as np

    k = np.array([1, 10**9, 3, 10**6])
    n, avg, x = np.array([10, 10, 0, 500]), np.array([5.0, 5.0, 50.0, 7.0]), np.array([1.0, 2.0, 3.0, 4.0])
    for window in (10, 1000):
        got_n, got = update_many(n, avg, x, k, window)
        for i in range(len(k)):
            assert (int(got_n[i]), float(got[i])) == update(int(n[i]), float(avg[i]), float(x[i]), int(k[i]), window)
