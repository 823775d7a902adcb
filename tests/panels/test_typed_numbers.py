"""No hard-coded ratio or count in a sentence. Two checks:

- a guard over the string literals of k3lite/panels and k3lite/analytic (docstrings and comments aside): a ratio
  typed as digits and an "x" ("2.5x") is flagged unless it quotes a cited source, listed below with why;
- a sweep of the controls that feed the sentences the fifth reading found typed (the interactive speed against
  DeepSeek's, the frontier count, the home page's deployment, the cost compare's ratio): every "Nx" a sentence
  prints is implied by the numbers it prints or by a comparison it recorded, at every setting, and the counts are
  the lengths of what they count.
"""
from __future__ import annotations

import ast
import re

import pytest

from conftest import ROOT
from k3lite.base.wording import recording

RATIO = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)x\b")
NUMBER = re.compile(r"(?<![\w.])\$?(\d[\d,]*(?:\.\d+)?)")

# typed ratios that quote a cited source (the source says that number; nothing here computes it), by file
QUOTED = {
    "k3lite/analytic/hybrid.py": ("2.3x", "2.2x", "6.3x"),  # the Kimi Linear report's own figures (REPORTED)
    "k3lite/analytic/serving/deployment.py": ("1.8x",),  # the speculation source's reported TPS gain
    "k3lite/panels/attnres.py": ("1.25x",),  # the AttnRes paper's compute-equivalent gain
    "k3lite/panels/lab.py": ("1.25x",),  # the same paper, quoted on the lab page
    "k3lite/panels/words/attnres.py": ("1.25x",),  # the same paper, quoted at the paper level
    "k3lite/panels/serving_sections.py": ("2.54x",),  # SGLang's reported EPLB gain
    "k3lite/panels/cost.py": ("10x",),  # the seed article's "~9-10x" per-task saving, quoted
    "k3lite/panels/moe_routing.py": ("10x",),  # γ 0.01 against DeepSeek-V3's 0.001: both typed constants (see report)
}


def _docstrings(tree) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def typed_ratios(source: str, path: str = "") -> list[str]:
    """'line: 2.5x in ...' for each digit-x ratio in a string literal of `source` (an f-string's literal parts
    included; docstrings not) that QUOTED does not list for `path`."""
    tree = ast.parse(source)
    skip, allowed = _docstrings(tree), QUOTED.get(path, ())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            found += [f"{path}:{node.lineno}: {m.group(0)} in {node.value[:80]!r}" for m in RATIO.finditer(node.value)
                      if m.group(0) not in allowed]
    return found


def test_no_typed_ratio_in_the_sentences_code():
    found = []
    for f in sorted((ROOT / "k3lite").rglob("*.py")):
        rel = f.relative_to(ROOT).as_posix()
        if rel.startswith(("k3lite/panels/", "k3lite/analytic/")):
            found += typed_ratios(f.read_text(), rel)
    assert not found, "typed ratios (build them from the numbers, or quote a source in QUOTED):\n" + "\n".join(found)


def test_the_guard_can_fail():
    assert typed_ratios('x = f"{speed:.0f} tokens/s (2.5x DeepSeek\'s 20-22)"\n')
    assert not typed_ratios('def f():\n    """2.5x in a docstring"""\n    return f"{a / b:.1f}x"\n')


# ------------------------------------------------------------------------------------------ the sweep
def _numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in NUMBER.findall(text) if n.replace(",", "").replace(".", "").isdigit()]


def unexplained_ratios(text: str, made=()) -> list[str]:
    """Each 'Nx' of `text` that neither two numbers printed in it nor a recorded comparison (`made`) imply at N's
    printed precision (a ratio printed with d decimals is the true one rounded: within half a unit of its last
    digit, with the printed numbers' own rounding allowed)."""
    nums = [v for v in _numbers(RATIO.sub(" ", text)) if v > 0]
    bad = []
    for m in RATIO.finditer(text):
        shown = float(m.group(1))
        digits = len(m.group(1).split(".")[1]) if "." in m.group(1) else 0
        half = 0.5 * 10 ** -digits

        def near(r: float) -> bool:
            return abs(r - shown) <= half * 1.0001

        if any(near(c.a / c.b) or near(c.b / c.a) for c in made if min(c.a, c.b) > 0):
            continue
        if any(near(a / b) for a in nums for b in nums):
            continue
        bad.append(f"{m.group(0)} in {text[max(0, m.start() - 80):m.end() + 20]!r}")
    return bad


def test_the_ratio_check_can_fail():
    assert unexplained_ratios("30 tokens/s per user (2.5x DeepSeek's 20-22)")
    assert not unexplained_ratios("30 tokens/s per user (1.4-1.5x DeepSeek's reported 20-22)")
    assert unexplained_ratios("$0.035 on Kimi K3 and $0.002 on Kimi Linear 48B: Kimi K3 is 14.7x dearer")


@pytest.mark.parametrize("speed", [10.0, 21.0, 30.0, 50.0, 77.0, 200.0])
def test_the_interactive_speed_against_deepseek_follows_the_readers_speed(speed):
    from k3lite.analytic.serving.deployment import DEEPSEEK_TOKENS_PER_USER, against_deepseek

    text = f"{speed:.0f} tokens/s per user, our assumption ({against_deepseek(speed)})"
    lo, hi = DEEPSEEK_TOKENS_PER_USER
    assert not unexplained_ratios(text), text
    assert ("within" in text) == (lo <= speed <= hi)


def test_the_serving_page_prints_the_speed_clause_for_the_readers_speed():
    from streamlit.testing.v1 import AppTest

    from k3lite.analytic.serving.deployment import against_deepseek

    for speed in (30, 50):
        at = AppTest.from_file(str(ROOT / "views" / "serving.py"), default_timeout=300)
        at.query_params["sv_speed"] = str(speed)
        at.run()
        assert not at.exception, [e.message for e in at.exception]
        shown = " ".join([m.value for m in at.markdown] + [c.value for c in at.caption]
                         + [str(df.value.to_dict()) for df in at.dataframe])
        assert f"our assumption ({against_deepseek(float(speed))})" in shown, speed
        assert "2.5x DeepSeek" not in shown or speed == 50


@pytest.mark.parametrize("key", ["deepseek-v3", "kimi-k2", "kimi-linear-48b-a3b", "all-mla", "no-latent"])
@pytest.mark.parametrize("turns", [5.0, 20.0, 80.0])
def test_the_cost_compare_prints_prices_that_imply_its_ratio(key, turns):
    from k3lite.analytic.cost import TaskProfile
    from k3lite.panels.core import pair_of
    from k3lite.panels.cost import pair_panel

    with recording() as made:
        panel = pair_panel(pair_of(key), TaskProfile(turns=turns))
    head = panel.sentences[0].text
    assert not unexplained_ratios(head.split(" The task is")[0], ()), head  # from its printed prices alone
    assert not unexplained_ratios(panel.text, made)


@pytest.mark.parametrize("gpu, speed", [("B300", 30.0), ("B300", 20.0), ("GB300 NVL72", 30.0), ("B300", 45.0)])
def test_the_home_deployment_sentence_follows_its_deployment(monkeypatch, gpu, speed):
    from k3lite.analytic import ablation

    serve = dict(ablation.SERVE, gpu=gpu)
    monkeypatch.setattr(ablation, "SERVE", serve)
    monkeypatch.setattr(ablation, "SPEED", speed)
    with recording() as made:
        text = ablation.deployment_sentence()
    assert f"{serve['n_gpus']} x {gpu} (EP {serve['ep']}, attention TP {serve['tp']}" in text
    assert f"{speed:.0f} tokens/s per user" in text
    assert not unexplained_ratios(text, made), text
    dollars = [float(v) for v in re.findall(r"\$(\d+\.\d+)", text)]
    ratio = float(RATIO.search(text).group(1))
    assert abs(max(dollars) / min(dollars) - ratio) <= 0.006 + 0.01 * ratio  # printed $ imply the printed ratio


def test_the_frontier_count_counts_the_frontier():
    """'4379 setups and batches on its speed-price frontier' counted every searched point: the sentence now gives
    the searched points and the frontier's (its lower envelope) apart, each the length of what it counts."""
    from k3lite.analytic import ledger
    from k3lite.analytic.serving.frontier import frontier

    from k3lite.analytic.serving.price import Shape  # (the reason above)

    context = ledger.SERVING_DEFAULT[2]  # a request whose decode reads that context on average, as the ledger asks
    fr = frontier("kimi-k3", Shape(context - 512, 1024))
    text = ledger.wire_or_hbm()
    assert f"Of the {len(fr.points):,} setups and batches its speed–price search tries" in text
    assert f"of the {len(fr.envelope):,} on its frontier" in text
    assert len(fr.envelope) < len(fr.points)
    assert "kimi-k3 on" not in text and "Kimi K3 on" in text
