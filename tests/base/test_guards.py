"""Resource guards: threads, heavy-work slots, time bounds (the memory estimate is tests/analytic/test_budget.py)."""
import gc
import re
import threading
import time

import pytest
import torch

from conftest import heavy_slot_taken
from k3lite.base import guards

def test_bounded_threads_caps_and_never_raises(monkeypatch):
    before = torch.get_num_threads()
    try:
        assert guards.bounded_threads(1) == 1 == torch.get_num_threads()
        assert guards.bounded_threads(64) == 1  # a cap never raises the count
        torch.set_num_threads(2)
        monkeypatch.setenv("K3LITE_TORCH_THREADS", "1")
        assert guards.bounded_threads() == 1
        with pytest.raises(ValueError, match=">= 1"):
            guards.bounded_threads(0)
        monkeypatch.setenv("K3LITE_TORCH_THREADS", "many")
        with pytest.raises(ValueError, match="K3LITE_TORCH_THREADS"):
            guards.bounded_threads()
    finally:
        torch.set_num_threads(before)


def test_heavy_work_lets_one_job_run_and_tells_the_next_the_server_is_busy():
    with heavy_slot_taken("training the lab model", hold_s=10):
        with pytest.raises(guards.ServerBusy, match=r"busy \(training the lab model running"):
            with guards.heavy_work("a measured run", timeout_s=0.05):
                pass
        assert issubclass(guards.ServerBusy, ValueError)  # so pages' user_errors() shows it as st.error
    with guards.heavy_work("a measured run", timeout_s=1):  # the slot is free again
        with guards.heavy_work("nested in the same session", timeout_s=0.01):  # re-entrant per thread
            pass


def test_heavy_work_serialises_concurrent_jobs():
    inside, peak, lock = [0], [0], threading.Lock()

    def job():
        with guards.heavy_work("job", timeout_s=20):
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            time.sleep(0.02)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=job) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert peak[0] == guards.HEAVY_SLOTS == 1


def test_two_heavy_jobs_at_once_the_second_is_told_who_runs_and_when_to_try_again(monkeypatch):
    """Two visitors press a heavy button at once on one server process: the first trains, the second is refused
    with what runs (for how long), who else waits, and a 'try again in at most N s' computed from the running
    job's time bound; a third, waiting meanwhile, counts as waiting before a later one."""
    monkeypatch.setenv("K3LITE_JOB_LIMIT_S", "120")
    started, release, refusals = threading.Event(), threading.Event(), []

    def first():
        with guards.heavy_work("lab training"):
            started.set()
            release.wait(20)

    def second(timeout_s):
        try:
            with guards.heavy_work("the measured gloo run", timeout_s=timeout_s):
                pass
        except guards.ServerBusy as e:
            refusals.append(str(e))

    holder = threading.Thread(target=first)
    holder.start()
    try:
        assert started.wait(10)
        patient = threading.Thread(target=second, args=(3.0,))
        patient.start()
        time.sleep(0.3)  # the patient visitor now waits for the slot
        assert guards.heavy_queue() == (1, 1), "one running, one waiting (before this thread)"
        second(0.2)
        patient.join(10)
    finally:
        release.set()
        holder.join(10)
    assert len(refusals) == 2, refusals
    late = refusals[0]  # the 0.2 s visitor gave up first, while the patient one still waited
    assert late.startswith("the server is busy (lab training running for "), late
    assert "1 other visitor(s) waiting before you" in late and "waited 0.2 s" in late
    n = int(re.search(r"try again in at most (\d+) s", late).group(1))
    assert 115 <= n <= 120, late  # 120 s bound minus the ~1 s the training has run
    assert "no one else waiting" in refusals[1] and "waited 3 s" in refusals[1]
    assert guards.heavy_queue() == (0, 0)
    with guards.heavy_work("the next class", timeout_s=1):  # and the slot is free again
        pass


def test_the_try_again_time_is_the_running_jobs_own_bound():
    with heavy_slot_taken("a short measured run", hold_s=10):
        msg = guards.busy_message("lab training", 0.1, 0, now=time.monotonic() + 10_000)
    assert "try again in at most 1 s" in msg, "a job past its bound is about to stop: at least 1 s, never negative"
    assert guards.busy_message("x", 1, 0).endswith("try again in a moment"), "nothing running: no number to give"


def test_deadline_stops_a_long_loop():
    d = guards.deadline(0.05, "training")
    d.check(0)
    time.sleep(0.08)
    assert d.expired()
    with pytest.raises(guards.TimeLimit, match="training stopped at step 7: .*0.05 s"):
        d.check(7)
    with pytest.raises(ValueError, match="> 0 seconds"):
        guards.deadline(0)


def test_heavy_wait_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("K3LITE_HEAVY_TIMEOUT_S", "0.01")
    assert guards.heavy_timeout_from_env() == 0.01
    with heavy_slot_taken("holder", hold_s=10):
        t0 = time.monotonic()
        with pytest.raises(guards.ServerBusy, match="waited 0.01 s"):
            with guards.heavy_work("impatient"):
                pass
        assert time.monotonic() - t0 < 2
    for bad in ("soon", "-1", "inf"):
        monkeypatch.setenv("K3LITE_HEAVY_TIMEOUT_S", bad)
        with pytest.raises(ValueError, match="K3LITE_HEAVY_TIMEOUT_S"):
            guards.heavy_timeout_from_env()


# ------------------------------------------------------------------------------ caches in the pages
def _cache_decorators(path):
    """(function name, cache kind, has parameters, has max_entries/ttl) for every st.cache_* in a page."""
    import ast

    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            if isinstance(target, ast.Attribute) and target.attr in ("cache_data", "cache_resource"):
                kwargs = {k.arg for k in dec.keywords} if isinstance(dec, ast.Call) else set()
                params = node.args.args + node.args.kwonlyargs
                yield node.name, target.attr, bool(params), bool(kwargs & {"max_entries", "ttl"})


from pathlib import Path as _Path  # noqa: E402

PAGES_DIR = _Path(__file__).resolve().parents[2] / "views"
CONSTANT_KEYED = {"lab.py:shipped": "called once, with a constant path"}
UNBOUNDED_KNOWN: dict[str, str] = {}  # page -> what to fix (strict xfail: remove the entry once fixed)


@pytest.mark.parametrize("page", [pytest.param(p.name, marks=pytest.mark.xfail(strict=True, reason=UNBOUNDED_KNOWN[p.name]))
                                  if p.name in UNBOUNDED_KNOWN else p.name for p in sorted(PAGES_DIR.glob("*.py"))])
def test_caches_keyed_by_visitor_input_are_bounded(page):
    """A cache keyed by what visitors choose (prompt, slider) grows with every new value unless bounded:
    on a public server that is a memory leak. Every st.cache_data / st.cache_resource with parameters
    needs max_entries (or ttl)."""
    unbounded = [f"{page}:{name} ({kind})" for name, kind, has_params, bounded in _cache_decorators(PAGES_DIR / page)
                 if has_params and not bounded and f"{page}:{name}" not in CONSTANT_KEYED]
    assert not unbounded, f"unbounded caches keyed by visitor input: {unbounded}"


def test_job_time_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("K3LITE_JOB_LIMIT_S", raising=False)
    assert guards.deadline(what="training").seconds == 300
    monkeypatch.setenv("K3LITE_JOB_LIMIT_S", "0.01")
    d = guards.deadline(what="training")
    time.sleep(0.03)
    with pytest.raises(guards.TimeLimit, match="time bound of 0.01 s"):
        d.check(3)
    for bad in ("0", "never", "inf"):
        monkeypatch.setenv("K3LITE_JOB_LIMIT_S", bad)
        with pytest.raises(ValueError, match="K3LITE_JOB_LIMIT_S"):
            guards.deadline()


def test_lab_training_stops_at_its_time_bound(monkeypatch):
    """A long job has a time bound: with K3LITE_JOB_LIMIT_S tiny, pressing Train ends in a readable
    st.error naming the bound (TimeLimit via user_errors), not a traceback and not an endless run."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("K3LITE_JOB_LIMIT_S", "0.001")
    root = _Path(__file__).resolve().parents[2]
    at = AppTest.from_file(str(root / "views" / "lab.py"), default_timeout=180)
    at.query_params["lab_mixers"] = "linear"
    at.query_params["lab_steps"] = "1000"
    at.query_params["lab_seed"] = "4321"  # a run nobody has cached
    at.run()
    at.button(key="lab_train").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("time bound of 0.001 s" in e.value for e in at.error), [e.value for e in at.error]


def test_attention_residuals_page_refuses_a_run_over_budget(monkeypatch):
    """The budget is checked against the real prompt length before the model runs: a tiny budget gives a
    readable st.error naming the budget, and the default budget lets the default prompt through."""
    from streamlit.testing.v1 import AppTest

    page = str(PAGES_DIR / "attention_residuals.py")
    at = AppTest.from_file(page, default_timeout=120).run()
    assert not at.exception and not at.error and at.get("plotly_chart")
    monkeypatch.setenv("K3LITE_MEMORY_BUDGET_MB", "28")  # the lite weights alone are 27.5 MB
    at.radio(key="ar_mode").set_value("full").run()  # a new cache key, so the check runs again
    assert not at.exception
    assert any("memory budget of 28 MB" in e.value for e in at.error), [e.value for e in at.error]


def test_quiet_gc_sets_the_thresholds_and_refuses_to_turn_collection_off():
    before = gc.get_threshold()  # an app test earlier in this process may already have called quiet_gc
    try:
        gc.set_threshold(700, 10, 10)  # Python's defaults
        assert guards.quiet_gc() == guards.GC_THRESHOLDS == gc.get_threshold()
        assert guards.GC_THRESHOLDS[0] > 700  # a younger generation big enough for a rerun's temporaries
        for bad in ((0, 10, 10), (700, 10), (700.5, 10, 10)):
            with pytest.raises(ValueError, match="thresholds"):
                guards.quiet_gc(bad)
        assert gc.get_threshold() == guards.GC_THRESHOLDS  # a refused call changes nothing
    finally:
        gc.set_threshold(*before)
