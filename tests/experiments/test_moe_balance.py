"""The balancing training experiment (k3lite/experiments/moe_balance.py): quantile and bias beat raw top-k."""


def test_balance_experiment_quantile_and_bias_beat_raw_topk():
    from k3lite.experiments.moe_balance import run_balance

    runs = run_balance(steps=60, batch=128, methods=("none", "bias", "quantile"))
    tail = {m: sum(r.max_violation[-10:]) / 10 for m, r in runs.items()}
    assert tail["quantile"] < 0.5 * tail["none"], tail
    assert tail["bias"] < tail["none"], tail
    for r in runs.values():
        assert len(r.loss) == 60 and r.loss[-1] < r.loss[0]  # every method still learns the regression
        assert 0 <= r.stability <= 1 and sum(r.eval_load) == 2048 * 2
