"""Practice problems: for 50 seeds each, the drawn numbers stay in range, the answer is what the solution's own code
computes with the library, the solution ends on the answer, and the check accepts inside the tolerance and rejects
just outside it."""
import functools
import math
import re
from collections import Counter

import pytest

import k3lite.experiments.lab_store as lab_store
import k3lite.interconnect.analytic as interconnect_analytic
from conftest import ROOT
from k3lite.tour.practice import (BY_ID, PROBLEMS, SETS, TOPICS, TWO_PAGE, answer_key, check, class_link, key_csv,
                                  parse_seeds, problems_in)
from k3lite.tour.practice.core import last_number, num
from views.registry import PAGES

SEEDS = range(50)
MECHANISMS = ("moe", "kda", "hybrid_attention", "attention_residuals", "interconnect", "forward_pass", "serving",
              "cost_per_task", "lab")


def page_keys(url_path: str) -> set[str]:
    """The url_state keys a page reads (literal ones, its sections' picker, and home's per-preset knobs)."""
    spec = next(p for p in PAGES if p.url_path == url_path)
    text = (ROOT / spec.file).read_text()
    keys = set(re.findall(r'url_state\(\s*"([A-Za-z_0-9]+)"', text))
    keys |= set(re.findall(r'lazy_sections\([^)]*key="([A-Za-z_0-9]+)"', text))
    if url_path == "home":
        keys |= {f"home_{knob}_" for knob in ("experts", "top_k", "layers", "latent")}
    return keys


@pytest.fixture(scope="module", autouse=True)
def cached_slow_library_calls():
    """The solutions' code reloads the shipped lab runs (~1 s) and samples node-limited routing (~1 s) each time it
    runs: cached here so 50 seeds x every problem stay quick. The answers are unchanged (same files, same sampling)."""
    runs, sweep = lab_store.load_runs, interconnect_analytic.node_limit_sweep
    lab_store.load_runs = functools.lru_cache(maxsize=8)(runs)
    memo = {}

    def sweep_once(cfg, topology, ep_size, dispatch="fp8", combine="bf16"):
        key = (cfg.name, topology, ep_size, dispatch, combine)
        if key not in memo:
            memo[key] = sweep(cfg, topology, ep_size, dispatch, combine)
        return memo[key]

    interconnect_analytic.node_limit_sweep = sweep_once
    yield
    lab_store.load_runs, interconnect_analytic.node_limit_sweep = runs, sweep


def test_there_are_40_problems_at_least_3_per_mechanism_page_of_every_kind():
    assert len(PROBLEMS) >= 40
    per_topic = Counter(p.topic for p in PROBLEMS)
    assert all(per_topic[t] >= 3 for t in MECHANISMS), per_topic
    assert set(per_topic) <= set(TOPICS)
    assert set(Counter(p.kind for p in PROBLEMS)) == {"compute", "predict", "read"}
    assert len(BY_ID) == len(PROBLEMS), "problem ids must be unique"


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.id)
def test_every_problem_for_50_seeds(problem):
    keys = page_keys
    answers = []
    for seed in SEEDS:
        inst = problem.draw(seed)
        where = f"{problem.id} seed {seed}"
        for name, value in inst.given.items():  # the drawn numbers are in their stated range
            lo, hi = problem.ranges[name]
            assert lo <= value <= hi, f"{where}: {name} = {value} outside [{lo}, {hi}]"
        ns: dict = {}
        exec(inst.code, ns)  # the solution's code, run: the library's computation
        if inst.is_choice:
            assert inst.answer in inst.choices, where
            assert ns["answer"] == inst.answer, f"{where}: the code gives {ns['answer']!r}, the answer is {inst.answer!r}"
            assert inst.answer in inst.steps[-1], f"{where}: the solution does not end on the answer"
            assert check(inst, inst.answer).right
            for wrong in set(inst.choices) - {inst.answer}:
                assert not check(inst, wrong).right, f"{where}: {wrong!r} accepted"
        else:
            answer = float(inst.answer)
            assert math.isfinite(answer) and answer > 0, f"{where}: answer {answer}"
            assert math.isclose(ns["answer"], answer, rel_tol=1e-9), f"{where}: code {ns['answer']} vs {answer}"
            assert math.isclose(last_number(inst.steps[-1]), answer, rel_tol=6e-4), f"{where}: {inst.steps[-1]}"
            tol = inst.tolerance
            assert 0 < tol <= 0.1, f"{where}: tolerance {tol}"
            for sign in (1, -1):  # the boundary of the tolerance, both sides
                assert check(inst, answer * (1 + sign * tol * 0.999)).right, f"{where}: inside the band rejected"
                assert not check(inst, answer * (1 + sign * tol * 1.001)).right, f"{where}: outside accepted"
        assert inst.hint_page in {p.url_path for p in PAGES}, where
        known = keys(inst.hint_page)
        unknown = [k for k in inst.hint_query if k not in known and not k.startswith(tuple(known))]
        assert not unknown, f"{where}: the hint link sets {unknown}, which {inst.hint_page} does not read"
        assert set(inst.pages) <= {p.url_path for p in PAGES} and inst.hint_page in inst.pages, where
        answers.append(inst.answer if inst.is_choice else round(float(inst.answer), 6))
    assert len(set(answers)) > 1, f"{problem.id}: every seed has the same answer {answers[0]!r}"


def test_the_same_seed_gives_the_same_numbers_and_other_seeds_others():
    for p in PROBLEMS:
        assert p.draw(3).question == p.draw(3).question and p.draw(3).answer == p.draw(3).answer
        assert len({p.draw(s).question for s in range(10)}) > 1, p.id


def test_the_two_page_list_is_what_the_problems_draw():
    assert set(TWO_PAGE) == {p.id for p in PROBLEMS if len(p.draw(0).pages) > 1}
    assert len(TWO_PAGE) >= 3


def test_the_check_says_how_far_off():
    inst = BY_ID["moe-mean-load"].draw(0)
    answer = float(inst.answer)
    assert "3.0x too high" in check(inst, 3 * answer).text
    assert "20% too low" in check(inst, 0.8 * answer).text
    assert check(inst, answer).text.startswith("Right")


def test_numbers_print_with_four_digits():
    assert [num(x) for x in (12345.6, 3.0, 0.012345, 123.456)] == ["12,346", "3", "0.01235", "123.5"]
    assert last_number("**Answer: 12,346 kB**") == 12346


def test_seeds_parse_from_what_a_teacher_types():
    assert parse_seeds("1-3, 5; 2") == [1, 2, 3, 5]
    for bad in ("", "a-b", "5-1", "1-100000"):
        with pytest.raises(ValueError):
            parse_seeds(bad)


def test_the_key_lists_every_seed_and_question_as_csv():
    problems = problems_in("kda")
    rows = answer_key(problems, [1, 2])
    assert len(rows) == 2 * len(problems)
    assert rows[0]["answer"] == pytest.approx(float(problems[0].draw(1).answer), rel=1e-5)
    text = key_csv(rows)
    assert text.splitlines()[0] == "seed,question,problem,question text,answer,unit,tolerance (%),id"
    import csv
    import io
    back = list(csv.DictReader(io.StringIO(text)))
    assert len(back) == len(rows) and back[0]["question text"] == problems[0].draw(1).question


def test_sets_and_class_links():
    assert set(SETS) >= {"all", "starter", "two-pages", *MECHANISMS}
    assert [p.difficulty for p in problems_in("starter")] == [1] * len(SETS["starter"])
    assert problems_in("moe", 2) == [p for p in problems_in("moe") if p.difficulty == 2]
    assert class_link("kda", 7) == "practice?set=kda&seed=7"
    assert class_link("kda", 7, teacher=True) == "practice?set=kda&seed=7&key=1"
    with pytest.raises(ValueError, match="known"):
        problems_in("nope")
