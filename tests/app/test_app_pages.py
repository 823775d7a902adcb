"""Every page renders under AppTest with no exception, and the entry point navigates."""
import pytest
from streamlit.testing.v1 import AppTest

from conftest import APP_PAGE_PATHS, PAGE_FILES, ROOT


def test_app_entry_renders_home():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("K3" in t.value for t in at.title)


@pytest.mark.parametrize("page", PAGE_FILES)
def test_page_renders(page):
    at = AppTest.from_file(str(ROOT / "views" / page), default_timeout=120).run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.title, f"{page} shows no title"
    import re
    shown = "\n".join(e.value for kind in ("markdown", "caption", "info", "warning", "success")
                      for e in at.get(kind) if isinstance(getattr(e, "value", None), str))
    leaked = re.findall(r"\{[a-z_][a-z_0-9]*[\[(.]\w*", shown)
    assert not leaked, f"{page}: f-string placeholders reached the page unformatted: {leaked[:3]}"


def test_every_page_is_in_navigation():
    listed = set(APP_PAGE_PATHS)
    for page in PAGE_FILES:
        assert f"views/{page}" in listed, f"{page} is not listed in views/registry.py (app.py's navigation)"


@pytest.mark.parametrize("page", [p for p in PAGE_FILES if p != "home.py"])
def test_navigation_reaches_page(page):
    """Through app.py's st.navigation (as a visitor clicking the sidebar), each page runs cleanly."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page(f"views/{page}").run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.title


def test_home_bad_config_shows_error_not_traceback():
    at = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=120).run()
    at.selectbox(key="home_preset").set_value("lite").run()
    at.number_input(key="home_top_k_lite").set_value(40).run()  # lite has 32 experts
    assert not at.exception
    assert any("top_k (40) must be <= moe.n_routed_experts (32)" in e.value for e in at.error)


def test_home_count_updates_with_experts():
    at = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=120).run()
    at.selectbox(key="home_preset").set_value("lite").run()
    before = at.metric[0].value
    at.number_input(key="home_experts_lite").set_value(128).run()
    assert not at.exception and at.metric[0].value != before


def test_home_reads_preset_from_url():
    at = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=120)
    at.query_params["home_preset"] = "kimi-k2"
    at.run()
    assert at.selectbox(key="home_preset").value == "kimi-k2"
    bad = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=120)
    bad.query_params["home_preset"] = "gpt-9"
    bad.run()
    assert bad.selectbox(key="home_preset").value == "kimi-k3"
    assert any("Ignored `home_preset=gpt-9`" in w.value for w in bad.warning)


def test_moe_warm_up_thread_finishes_cleanly_and_is_not_a_daemon(monkeypatch):
    """The MoE page warms the other layers' states in a background thread once per server. A daemon thread
    (inherited from Streamlit's script thread unless said otherwise) killed inside torch at exit aborts the whole
    process (exit 134), so it must be a non-daemon thread, and it must not fail."""
    import threading

    from k3lite.viz import moe_live

    for t in threading.enumerate():  # an earlier test's warm-up (the cache is per process) must not be counted
        if t.name == "k3lite-moe-warmup":
            t.join(timeout=120)
    moe_live.clear_all()  # so this run starts its own warm-up (the caches live in k3lite.viz.moe_live)
    failures = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    at = AppTest.from_file(str(ROOT / "views" / "moe.py"), default_timeout=120).run()
    assert not at.exception
    warm = [t for t in threading.enumerate() if t.name == "k3lite-moe-warmup"]
    assert len(warm) == 1, "the page starts one warm-up thread"
    for t in warm:
        assert not t.daemon
        t.join(timeout=120)
        assert not t.is_alive()
    assert not failures, failures


def test_lazy_expanders_send_their_body_only_once_opened(monkeypatch):
    """views/common.lazy_expander: closed, a chart's expander and show_code's send nothing (the browser draws only
    what is on screen); opened (its key set, as a click does), the body is there. The tests' K3LITE_EXPANDERS=open
    switches this off, so it is unset here."""
    monkeypatch.delenv("K3LITE_EXPANDERS")
    at = AppTest.from_file(str(ROOT / "views" / "moe.py"), default_timeout=120)
    at.session_state["moe_section"] = "(a)–(b) Routing and balance on a prompt"  # the section holding the expander
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    closed_charts = len(at.get("plotly_chart"))
    assert not at.code, "show_code's expanders are closed: no source is sent"
    at.session_state["moe_x_trained_model_s_own"] = True
    at.session_state["code_latent_path_latent_path_figure"] = True
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert len(at.get("plotly_chart")) == closed_charts + 1, "the trained router's heatmap, once its expander opens"
    assert any("def latent_path(" in c.value for c in at.code)


def _section_bodies(at, key: str) -> list[bool]:
    """Whether each section of the page's `lazy_sections` row (its segmented control `key`) has a body."""
    kids = list(at.main.children.values())
    i = next(k for k, c in enumerate(kids) if type(c).__name__ == "ButtonGroup" and c.key == key)
    return [len(c.children) > 0 for c in kids[i + 1:i + 1 + len(at.segmented_control(key=key).options)]]


def test_lazy_sections_send_nothing_until_one_is_picked(monkeypatch):
    """views/common.lazy_sections on the MoE page: the first load sends the top picture and no section (the first
    picture would otherwise wait for the heatmap and bars of (a)-(b)); picking (c) sends (c)'s chart only."""
    monkeypatch.delenv("K3LITE_EXPANDERS")
    at = AppTest.from_file(str(ROOT / "views" / "moe.py"), default_timeout=120).run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.segmented_control(key="moe_section").value is None
    assert not any(s.value.startswith(("(a)", "(c)")) for s in at.subheader)
    assert len(at.get("plotly_chart")) == 1, "the first picture only"
    assert _section_bodies(at, "moe_section") == [False] * 5
    at.segmented_control(key="moe_section").set_value("(c) Balance during training").run()
    assert not at.exception, [e.message for e in at.exception]
    subheaders = [s.value for s in at.subheader]
    assert any(s.startswith("(c)") for s in subheaders) and not any(s.startswith("(a)") for s in subheaders)
    assert _section_bodies(at, "moe_section") == [False, True, False, False, False]


def test_a_link_opens_a_section_and_a_bad_one_says_so(monkeypatch):
    """`?home_section=<label>` (the sidebar's ledger link, a shared link) opens that section; an unknown label
    opens none and says which labels exist; picking a section puts it in the URL."""
    from views.registry import LEDGER_SECTION
    monkeypatch.delenv("K3LITE_EXPANDERS")
    at = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=120)
    at.query_params["home_section"] = LEDGER_SECTION
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.segmented_control(key="home_section").value == LEDGER_SECTION
    assert _section_bodies(at, "home_section") == [True, False, False]
    at = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=120)
    at.query_params["home_section"] = "no such section"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("home_section" in w.value and LEDGER_SECTION in w.value for w in at.warning), [w.value for w in at.warning]
    assert _section_bodies(at, "home_section") == [False, False, False]
    at.segmented_control(key="home_section").set_value("Where the parameters are").run()
    assert at.query_params["home_section"] == "Where the parameters are"


def test_serving_inputs_keep_their_values_after_their_expander_closes(monkeypatch):
    """The serving page's prices and deployment are drawn only while their expanders are open; a value set there
    must still price the tokens after the expander closes (it lives in the URL, as a shared link)."""
    monkeypatch.delenv("K3LITE_EXPANDERS")
    at = AppTest.from_file(str(ROOT / "views" / "serving.py"), default_timeout=120).run()
    assert not at.exception, [e.message for e in at.exception]
    assert [n.key for n in at.number_input] == ["sv_speed", "sv_t_in", "sv_t_out", "sv_cached"], \
        "closed: only the first screen's inputs are drawn (the speed and the request shape)"
    at.session_state["serving_x_gpu_hour_prices"] = True
    at.session_state["serving_x_your_deployment"] = True
    at.run()
    at.number_input(key="sv_usd_GB300_NVL72").set_value(123.4)
    at.number_input(key="sv_gpus").set_value(128).run()
    assert not at.exception, [e.message for e in at.exception]
    opened = [m.value for m in at.caption if m.value.startswith("Your deployment")]
    at.session_state["serving_x_gpu_hour_prices"] = False
    at.session_state["serving_x_your_deployment"] = False
    for _ in range(2):  # the run that stops drawing the inputs, and the one after it
        at.run()
        assert not at.exception, [e.message for e in at.exception]
        assert at.session_state["sv_usd_GB300_NVL72"] == 123.4 and at.session_state["sv_gpus"] == 128
        assert at.query_params["sv_gpus"] == "128"
        assert [m.value for m in at.caption if m.value.startswith("Your deployment")] == opened
    assert "128 × GB300 NVL72" in opened[0]


LAZY_SECTION_PAGES = sorted(p.name for p in (ROOT / "views").glob("*.py") if "lazy_sections(" in p.read_text()
                            and p.name != "common.py")


@pytest.mark.parametrize("page", LAZY_SECTION_PAGES)
def test_every_lazy_section_renders_on_its_own(page, monkeypatch):
    """A lazy section runs only when picked, so it must not lean on names another section's body defines: each
    section, picked alone on a fresh session, renders without an exception, and only it has a body."""
    import re
    monkeypatch.delenv("K3LITE_EXPANDERS")
    key = re.search(r'lazy_sections\(\w+, key="(\w+)"\)', (ROOT / "views" / page).read_text()).group(1)
    at = AppTest.from_file(str(ROOT / "views" / page), default_timeout=180).run()
    labels = at.segmented_control(key=key).options
    assert labels, labels  # one section is a button that opens it (cost per task's planner / worker)
    assert _section_bodies(at, key) == [False] * len(labels), "no section is drawn before one is picked"
    for i, label in enumerate(labels):
        at = AppTest.from_file(str(ROOT / "views" / page), default_timeout=180)
        at.session_state[key] = label
        at.run()
        assert not at.exception, (label, [e.message for e in at.exception])
        assert _section_bodies(at, key) == [j == i for j in range(len(labels))], f"{label}: only it has a body"
        assert not _heavy_in_expanders(at._tree), f"{page} / {label}: {_heavy_in_expanders(at._tree)}"


HEAVY = {"PlotlyChart", "Dataframe", "Code", "UnknownElement", "Table"}  # charts, tables, highlighted code
def _heavy_in_expanders(node, inside=None, found=None) -> list[tuple[str, str]]:
    found = [] if found is None else found
    kind = type(node).__name__
    inside = node.label if kind == "Expander" else inside
    if inside and kind in HEAVY:
        found.append((inside[:60], kind))
    for child in getattr(node, "children", {}).values():
        _heavy_in_expanders(child, inside, found)
    return found


@pytest.mark.parametrize("page", PAGE_FILES)
def test_closed_expanders_send_no_chart_table_or_code(page, monkeypatch):
    """At a page's defaults every expander is closed: one holding a chart, a table or highlighted code must be a
    `lazy_expander`, or the browser draws it with the first screen (docs/performance.md, 'What the browser draws first')."""
    monkeypatch.delenv("K3LITE_EXPANDERS")
    at = AppTest.from_file(str(ROOT / "views" / page), default_timeout=180).run()
    assert not at.exception, [e.message for e in at.exception]
    assert not _heavy_in_expanders(at._tree), f"{page}: sent inside closed expanders: {_heavy_in_expanders(at._tree)}"


def test_reset_keeps_the_reader_in_the_section_they_are_in(monkeypatch):
    """Reset to defaults in the lab's Train section forgets the controls, not which section is open (its key starts
    with the page's prefix too): the reader stays on Train."""
    monkeypatch.delenv("K3LITE_EXPANDERS")
    at = AppTest.from_file(str(ROOT / "views" / "lab.py"), default_timeout=180)
    at.session_state["lab_section"] = "Train it yourself"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    at.selectbox(key="lab_task").set_value("palindrome").run()
    at.button(key="reset_lab_").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.session_state["lab_section"] == "Train it yourself"
    assert any(h.value == "Train it yourself" for h in at.header), "the Train panel is still the one drawn"
    assert at.selectbox(key="lab_task").value != "palindrome", "the control itself went back to its default"


def _page_with_link(monkeypatch, page: str, query: dict, lazy: bool) -> AppTest:
    """views/<page> run once with `query` in its URL, its lazy expanders lazy (closed: bodies not drawn) or, as the
    other tests run them, plain (K3LITE_EXPANDERS=open: every body drawn)."""
    if lazy:
        monkeypatch.delenv("K3LITE_EXPANDERS", raising=False)
    else:
        monkeypatch.setenv("K3LITE_EXPANDERS", "open")
    at = AppTest.from_file(str(ROOT / "views" / page), default_timeout=120)
    at.query_params.update(query)
    return at.run()


def _moved_sentence(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("Per MoE layer a token moves"))


def test_interconnect_wire_settings_hold_while_their_expander_is_closed(monkeypatch):
    """The Interconnect page's "wire format and node limit" controls sit in a lazy expander (seven controls on the
    first screen, not eleven): closed, they are not drawn, yet a link's values for them still set the picture, and
    keep setting it after another control moves, exactly as with the expander open."""
    link = {"ic_dispatch": "bf16", "ic_node_limit": "2", "ic_latent": "1/4"}

    closed, opened = (_page_with_link(monkeypatch, "interconnect.py", link, lazy) for lazy in (True, False))
    for at in (closed, opened):
        assert not at.exception, [e.message for e in at.exception]
    assert closed.session_state["ic_x_wire"] is False
    assert not any(s.key == "ic_node_limit" for s in closed.slider), "closed: the node-limit slider is not drawn"
    assert any(s.key == "ic_node_limit" for s in opened.slider)
    assert _moved_sentence(closed) == _moved_sentence(opened)
    default = AppTest.from_file(str(ROOT / "views" / "interconnect.py"), default_timeout=120).run()
    assert _moved_sentence(default) != _moved_sentence(closed), "the link's wire settings change the bytes"
    for at in (closed, opened):  # another control moves (a fragment rerun): the closed expander's values hold
        at.slider(key="ic_top_k").set_value(4).run()
        assert not at.exception, [e.message for e in at.exception]
    assert _moved_sentence(closed) == _moved_sentence(opened)
    # opened, then closed again: Streamlit forgets a widget's value once a run does not draw it; url_state keeps it
    closed.session_state["ic_x_wire"] = True
    closed.run()
    assert any(s.key == "ic_node_limit" for s in closed.slider)
    closed.session_state["ic_x_wire"] = False
    closed.run()
    closed.slider(key="ic_top_k").set_value(4).run()
    assert not closed.exception, [e.message for e in closed.exception]
    assert _moved_sentence(closed) == _moved_sentence(opened)
    assert closed.session_state["ic_node_limit"] == 2 and closed.session_state["ic_dispatch"] == "bf16"


def test_home_edits_hold_while_change_it_is_closed(monkeypatch):
    """Home's four "Change it" inputs are drawn only while their lazy expander is open: an edit made while open
    keeps setting the count after the expander closes and the page reruns; Reset puts it back."""
    monkeypatch.delenv("K3LITE_EXPANDERS", raising=False)
    at = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=120).run()
    assert not any(n.key == "home_experts_kimi-k3" for n in at.number_input), "closed: the inputs are not drawn"
    default = at.metric[0].value
    at.session_state["home_x_change"] = True
    at.run()
    at.number_input(key="home_experts_kimi-k3").set_value(128).run()
    edited = at.metric[0].value
    assert edited != default
    at.session_state["home_x_change"] = False
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert not any(n.key == "home_experts_kimi-k3" for n in at.number_input)
    assert at.metric[0].value == edited, "the edit still sets the count with the expander closed"
    at.button(key="reset_home__ledger_").click().run()
    assert at.metric[0].value == default and at.session_state["home_x_change"] is False, "Reset: defaults, still closed"


def test_cost_more_task_settings_hold_while_their_expander_is_closed(monkeypatch):
    """Cost per task's "more task settings" (four sliders and the serving-physics toggle) are drawn only while their
    lazy expander is open; closed, a link's values for them still price the tasks, as with it open, also after
    another control moves."""
    link = {"cost_out": "4000", "cost_cache": "0", "cost_attempts": "1", "cost_physics": "true"}

    def page(lazy: bool, query: dict) -> AppTest:
        return _page_with_link(monkeypatch, "cost_per_task.py", query, lazy)

    def verdict(at) -> str:
        return next(m.value for m in at.markdown if "cheapest per completed task" in m.value)

    closed, opened = page(True, link), page(False, link)
    for at in (closed, opened):
        assert not at.exception, [e.message for e in at.exception]
    assert not any(s.key == "cost_out" for s in closed.slider), "closed: its sliders are not drawn"
    assert any(s.key == "cost_out" for s in opened.slider)
    assert verdict(closed) == verdict(opened) != verdict(page(True, {})), "the link's settings change the price"
    for at in (closed, opened):
        at.slider(key="cost_turns").set_value(40).run()
        assert not at.exception, [e.message for e in at.exception]
    assert verdict(closed) == verdict(opened)
    assert closed.session_state["cost_out"] == 4000 and closed.session_state["cost_physics"] is True
