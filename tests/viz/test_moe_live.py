"""k3lite/viz/moe_live.py: the MoE page's caches (shared, bounded, one computation per key) and the computed
reading of max-violation (MoE at 896/16 says what its numbers mean)."""
import threading
import time

import numpy as np
import pytest

from k3lite.analytic.placement import chance_violation, mean_load_per_expert
from k3lite.experiments.precomputed import moe_default_demo
from k3lite.viz import moe_live
from k3lite.viz.moe_live import SharedCache, violation_reading


def test_chance_violation_is_the_fair_router_s_floor():
    # many assignments per expert: chance is nearly even; about one per expert: chance alone reads 1 or more
    assert chance_violation(20_000, 8, 64) < 0.1
    assert chance_violation(64, 1, 64) > 1.0
    # by hand for one draw: the busiest expert's load over the mean, minus 1
    rng = np.random.default_rng(0)
    picks = np.argpartition(rng.random((500, 32)), 3, axis=1)[:, :4]
    by_hand = np.bincount(picks.ravel(), minlength=32).max() / mean_load_per_expert(500, 4, 32) - 1
    assert chance_violation(500, 4, 32, seeds=1) == pytest.approx(by_hand)
    with pytest.raises(ValueError, match="top_k must be in 1..n_experts"):
        chance_violation(10, 9, 8)


def test_violation_reading_is_built_from_the_demo():
    demo = moe_default_demo()
    for method in ("none", "quantile"):
        text = violation_reading(demo, method)
        v = demo.eval_violation[method]
        n_experts = len(demo.eval_load[method])
        assert f"max-violation {v:.2f}" in text and f"{1 + v:.2f}x the even share" in text
        assert f"busiest of the {n_experts} experts" in text
        chance = chance_violation(demo.eval_tokens, round(sum(demo.eval_load[method]) / demo.eval_tokens), n_experts)
        assert f"max-violation {chance:.2f})" in text or "as even as chance allows" in text
    assert "balancing updates saw a batch" in violation_reading(demo, "quantile")
    assert "balancing updates" not in violation_reading(demo, "none")  # nothing was fitted for no balancing


def test_shared_cache_computes_each_key_once_and_stays_bounded():
    calls = []

    def slow(x):
        calls.append(x)
        time.sleep(0.05)
        return x * 2

    cache = SharedCache(slow, maxsize=2)
    threads = [threading.Thread(target=cache, args=(3,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [3]  # four sessions at once, one computation
    assert cache(4) == 8 and cache(5) == 10 and len(cache) == 2 and not cache.cached(3)  # LRU bound

    def bad(x):
        raise ValueError("no")

    failing = SharedCache(bad, maxsize=2)
    for _ in range(2):  # an error is not cached and leaves no lock behind
        with pytest.raises(ValueError):
            failing(1)
    assert len(failing) == 0 and not failing._locks


def test_neighbours_of_default_are_one_slider_step_away():
    base = moe_live.moe_page_cfg(moe_live.lite_model()[0].cfg.d_model)
    steps = {(c.n_routed_experts - base.n_routed_experts, c.top_k - base.top_k) for c in moe_live.neighbours_of_default()}
    assert steps == {(-1, 0), (1, 0), (0, -1), (0, 1)}


def test_a_warm_up_caught_at_interpreter_exit_is_told_apart_from_a_real_error():
    """The warm-up thread outlives a server told to stop; Python's thread pools then refuse new work while the main
    thread still reads as alive. is_exiting must see that as an exit (CI logged it as a traceback), and a pool
    refusing after its own shutdown (a real bug) as an error."""
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    from k3lite.viz.moe_live import is_exiting

    pool = ThreadPoolExecutor(1)
    pool.shutdown()
    try:
        pool.submit(int)
    except RuntimeError as e:
        assert not is_exiting(e), str(e)
    script = (
        "import threading, time\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from k3lite.viz.moe_live import is_exiting\n"
        "busy = ThreadPoolExecutor(1)\n"
        "busy.submit(time.sleep, 2)  # at exit Python joins this worker for 2 s, the main thread still alive\n"
        "def late():\n"
        "    time.sleep(0.5)  # inside that join: the pools already refuse new work\n"
        "    try:\n"
        "        ThreadPoolExecutor(1).submit(int)\n"
        "        print('accepted')\n"
        "    except RuntimeError as e:\n"
        "        print('exiting' if is_exiting(e) else 'error', e)\n"
        "threading.Thread(target=late, daemon=False).start()\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("exiting"), (out.stdout, out.stderr)
