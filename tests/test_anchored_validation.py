"""The report's anchored validation ("How far to trust it: re-anchored …") on a recorded real run: scored against
the unloads the leader logged, on the closed loop's inputs (tests/fixtures/real-runs/writes-threshold)."""

from pathlib import Path

RUNS = Path(__file__).parent / "fixtures" / "real-runs"


def test_the_anchored_simulation_is_scored_against_the_leaders_log_on_its_own_averages():
    """writes-threshold: 20 changes of owner between snapshots, 14 of them moves by hand; the leader logged 6
    unloads. Re-anchored at every snapshot and run on the leader's logged cycles and its averages replayed from
    every load report the brokers wrote, the simulation of ThresholdShedder makes those 6, each between the same two
    snapshots and to the logged broker; on the averages estimated from a snapshot a minute it picks the other of
    the hot pair more often (docs/validation.md); against every change of owner it would be scored for the moves
    by hand too."""
    from lb_pipeline.model.load_manager import configured_strategy
    from lb_pipeline.simulation.history import build_history
    from lb_pipeline.simulation.landing import read_history, read_leader
    from lb_pipeline.simulation.leader_averages import leader_averages, stored_every
    from lb_pipeline.simulation.load_model import LoadModel, fit_load_model
    from lb_pipeline.simulation.run import run_config
    from lb_pipeline.simulation.validation import predict_recorded

    landing, day = RUNS / "writes-threshold" / "landing", "2026-12-06"
    cluster, brokers, bundles, config, notes, policies, _, _ = read_history(landing, day)
    history = build_history(cluster, brokers, bundles)
    model = LoadModel.from_table(fit_load_model(brokers), history.brokers)
    cfg, strategy = run_config(config, {})[0], configured_strategy(config)

    def scored(replayed: bool, logged: bool) -> tuple:
        averages, events, written, quotas = read_leader(landing, day, cluster, [], bundles if replayed else None)
        leader = leader_averages(history, averages, events, written, stored_every(config), quotas)
        r = predict_recorded(history, model, cfg, strategy, policies=policies, events=events if logged else None,
                             leader=leader)
        return r["predicted_unloads"], r["recorded_unloads"], r["matched_unloads"], r["destinations_agree"]

    assert scored(replayed=True, logged=True) == (6, 6, 6, 6)
    estimated = scored(replayed=False, logged=True)
    assert estimated[1] == 6 and estimated[2] < 6
    assert scored(replayed=True, logged=False)[1] == 20  # every change of owner, the moves by hand among them
