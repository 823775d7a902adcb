"""Small bugs a user hit, each pinned by a test that fails on the old code.

The third one ("/home" showed a "Page not found" toast) needs the real router: tests/app/test_browser_legibility.py.
"""
from streamlit.testing.v1 import AppTest

from conftest import ROOT


def _editor(at):
    editors = [d for d in at.dataframe if d.proto.editing_mode]  # st.data_editor renders as an editable dataframe
    assert len(editors) == 1, f"expected the one model table, found {len(editors)} editors"
    return editors[0]


def test_cost_table_edits_survive_a_slider_move():
    """The editor's widget identity must not depend on the sliders: its key embedded the success and turns
    sliders' values, so moving either made a new widget and silently dropped the user's edits."""
    at = AppTest.from_file(str(ROOT / "views" / "cost_per_task.py"), default_timeout=120).run()
    before = _editor(at).proto.id
    for key, value in (("cost_success", 55), ("cost_turns", 35), ("cost_cache", 10)):
        at.slider(key=key).set_value(value).run()
        assert not at.exception, [e.message for e in at.exception]
        assert _editor(at).proto.id == before, f"moving {key} replaced the model table (edits would be lost)"


def test_cost_table_edits_survive_its_expander_closing(monkeypatch):
    """The model table is drawn only while its expander is open (views/common.kept_editor); an edit made there must
    still price the tasks after the expander closes. The edit is sent as the browser sends it (the editor's JSON)."""
    import json
    monkeypatch.delenv("K3LITE_EXPANDERS")
    at = AppTest.from_file(str(ROOT / "views" / "cost_per_task.py"), default_timeout=120).run()
    assert not [d for d in at.dataframe if d.proto.editing_mode], "closed: no editor is drawn"

    def k3_sentence():
        return next(m.value for m in at.markdown if "cheapest per completed task" in m.value)

    default = k3_sentence()
    at.session_state["cost_per_task_x_per_model"] = True
    at.run()
    states = at._tree.get_widget_states()
    edit = states.widgets.add()
    edit.id = _editor(at).proto.id
    # the column as the browser names it: with its evidence marker (views.common.evidence_columns)
    success = next(c for c in _editor(at).value.columns if c.startswith("success per attempt (%)"))
    edit.string_value = json.dumps({"edited_rows": {"0": {success: 10.0}}, "added_rows": [], "deleted_rows": []})
    at._run(states)
    assert not at.exception, [e.message for e in at.exception]
    edited = k3_sentence()
    assert edited != default, "K3's success at 10% changes its cost per task"
    assert _editor(at).proto.id != edit.id, "the fold drew a fresh editor over the edited rows"
    at.session_state["cost_per_task_x_per_model"] = False
    for _ in range(2):
        at.run()
        assert not at.exception, [e.message for e in at.exception]
        assert k3_sentence() == edited, "the edit still prices the tasks with the table closed"
    at.session_state["cost_per_task_x_per_model"] = True
    at.run()
    assert k3_sentence() == edited


def test_forward_pass_stage_control_matches_the_heading():
    """The stage slider read 0-based (41) beside the heading's 1-based "42/42", and had no visible label."""
    at = AppTest.from_file(str(ROOT / "views" / "forward_pass.py"), default_timeout=180).run()
    control = at.select_slider(key="fp_stage")
    assert control.label.strip(), "the stage control has no label"
    assert control.proto.label_visibility.value == control.proto.label_visibility.VISIBLE
    for index in (0, len(control.options) // 2, len(control.options) - 1):
        control.set_value(index).run()
        assert not at.exception, [e.message for e in at.exception]
        control = at.select_slider(key="fp_stage")
        shown = control.options[control.value]  # options are the stage indices 0..N-1, shown formatted
        heading = at.subheader[0].value
        assert heading.startswith(f"{shown} · "), f"control shows {shown!r}, heading says {heading!r}"


def test_every_page_links_to_the_byte_ledger():
    """The ledger lives on home; app.py's sidebar links to it from every page (reachable from every page)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    for page in ("views/kda.py", "views/cost_per_task.py"):
        at.switch_page(page).run()
        assert not at.exception, [e.message for e in at.exception]
        links = [link.proto.label for link in at.sidebar.get("page_link")]
        assert any("ledger" in label for label in links), links


def test_kda_page_caption_names_the_input_it_was_fed():
    """The caption said "byte embeddings of the prompt" when the input was "random"."""
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT
    at = AppTest.from_file(str(ROOT / "views" / "kda.py"), default_timeout=180)
    at.query_params["kda_source"] = "random"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    layer = next(c.value for c in at.caption if c.value.startswith("Layer:"))
    assert "Gaussian random vectors" in layer and "byte embeddings" not in layer
    at.query_params["kda_source"] = "prompt"
    at = AppTest.from_file(str(ROOT / "views" / "kda.py"), default_timeout=180).run()
    layer = next(c.value for c in at.caption if c.value.startswith("Layer:"))
    assert "byte embeddings of the prompt" in layer


def _home_markdown() -> str:
    at = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    return " ".join(m.value for m in at.markdown)


def test_home_says_which_pages_run_pytorch_and_which_are_arithmetic():
    """Home said every page runs a PyTorch implementation; serving, cost, the tour, the article, the glossary and
    the hybrid page are arithmetic. The sentence names both lists from the registry."""
    from views.registry import ARITHMETIC_PAGES, PAGES

    text = " ".join(_home_markdown().split())
    assert "Every page runs" not in text
    arithmetic = ", ".join(f"**{spec.short}**" for spec in PAGES if spec.stem in ARITHMETIC_PAGES)
    assert f"{arithmetic} are arithmetic" in text


def test_the_arithmetic_pages_import_no_model_runner():
    """What home calls arithmetic pages import neither torch nor the experiments, the model stack or its checkpoint."""
    import ast

    from views.registry import ARITHMETIC_PAGES

    runners = ("torch", "k3lite.experiments", "k3lite.model.stack", "k3lite.model.checkpoint", "k3lite.model.kda",
               "k3lite.model.moe", "k3lite.model.attnres", "k3lite.model.mla")
    for stem in ARITHMETIC_PAGES:
        tree = ast.parse((ROOT / "views" / f"{stem}.py").read_text())
        mods = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
        mods += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in mods if m.startswith(runners)], (stem, mods)


def test_forward_pass_map_caption_describes_the_shipped_checkpoints_config():
    """The caption said '32 latent experts top-4 + 1 shared' by hand; the lite checkpoint has 2 shared experts."""
    from k3lite.model.checkpoint import load_lite_model

    cfg = load_lite_model()[0].cfg
    at = AppTest.from_file(str(ROOT / "views" / "forward_pass.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    text = next(c.value for c in at.caption if c.value.startswith("The whole trained lite model"))
    types = cfg.layer_types()
    assert f"({cfg.n_layers} layers:" in text
    assert f"{types.count('kda') // types.count('mla')} KDA per MLA" in text
    assert (f"{cfg.moe.n_routed_experts} latent experts top-{cfg.moe.top_k} + {cfg.moe.n_shared_experts} shared"
            in text)
