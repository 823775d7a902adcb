"""The one list of pages: app.py builds its navigation from it; home, the tests and the app benchmark read it.

Plain data, no Streamlit import, so anything can import it. `url_path` is what a shared link carries
(`/kda?...`); it is kept stable across renames of the files so old links keep opening the same page.
"""
from __future__ import annotations

from typing import NamedTuple

from k3lite.panels.pages import TITLES


class PageSpec(NamedTuple):
    file: str  # path from the repository root, as st.Page and AppTest take it
    title: str  # navigation title (k3lite.panels.pages.TITLES, where a panel can read it)
    short: str  # link text on the home page
    icon: str
    url_path: str
    section: str
    default: bool = False

    @property
    def stem(self) -> str:
        return self.file.rsplit("/", 1)[-1].removesuffix(".py")


PAGES: tuple[PageSpec, ...] = (
    PageSpec("views/home.py", TITLES["home"], "Home", ":material/home:", "home", "Overview", default=True),
    PageSpec("views/tour.py", TITLES["tour"], "Guided tour", ":material/quiz:", "tour", "Overview"),
    PageSpec("views/practice.py", TITLES["practice"], "Practice", ":material/edit_note:", "practice", "Overview"),
    PageSpec("views/article.py", TITLES["article"], "The article, claim by claim", ":material/article:",
             "article", "Overview"),
    PageSpec("views/moe.py", TITLES["moe"], "Routing & balancing", ":material/alt_route:", "moe",
             "Mechanisms"),
    PageSpec("views/kda.py", TITLES["kda"], "Kimi Delta Attention", ":material/trending_down:", "kda",
             "Mechanisms"),
    PageSpec("views/hybrid_attention.py", TITLES["hybrid_attention"], "3:1 hybrid", ":material/extension:",
             "hybrid_attention", "Mechanisms"),
    PageSpec("views/attention_residuals.py", TITLES["attention_residuals"], "Attention Residuals", ":material/stairs:",
             "attention_residuals", "Mechanisms"),
    PageSpec("views/forward_pass.py", TITLES["forward_pass"], "Forward pass", ":material/play_arrow:",
             "forward_pass", "The whole model"),
    PageSpec("views/interconnect.py", TITLES["interconnect"], "Bytes on the wire", ":material/cable:",
             "interconnect", "The whole model"),
    PageSpec("views/serving.py", TITLES["serving"], "Serving", ":material/dns:", "serving",
             "The whole model"),
    PageSpec("views/cost_per_task.py", TITLES["cost_per_task"], "Cost per task", ":material/payments:", "cost_per_task",
             "The whole model"),
    PageSpec("views/lab.py", TITLES["lab"], "The lab", ":material/science:", "lab", "The whole model"),
    PageSpec("views/glossary.py", TITLES["glossary"], "Glossary", ":material/menu_book:", "glossary", "Reference"),
)

# Pages that run no PyTorch model: arithmetic over the published configs (the interconnect page measures only on
# request). Home's sentence on what runs live names these.
ARITHMETIC_PAGES: tuple[str, ...] = ("tour", "article", "hybrid_attention", "serving", "cost_per_task", "glossary")

# The pages that draw K3 beside the sidebar's "Compare K3 with" choice (views.common.compared): each picture on shared
# axes with computed sentences on the difference. tests/app/test_compare_pages.py opens each with every choice.
COMPARE_PAGES: tuple[str, ...] = ("home", "moe", "kda", "hybrid_attention", "attention_residuals", "forward_pass",
                                  "interconnect", "serving", "cost_per_task")

# the home page's section with the bytes ledger: its label there, and what the sidebar's link to it opens (?home_section=)
LEDGER_SECTION = "Bytes per decoded token"

PAGE_FILES: tuple[str, ...] = tuple(p.file for p in PAGES)
DEFAULT_PAGE: PageSpec = next(p for p in PAGES if p.default)


def by_url_path(url_path: str) -> PageSpec:
    for p in PAGES:
        if p.url_path == url_path:
            return p
    raise KeyError(f"no page with url_path {url_path!r}; known: {[p.url_path for p in PAGES]}")


# What each page shows that was NOT computed when the page ran: trained weights or results made offline by a
# CLI and shipped in assets/. The home page lists these; tests/analytic/test_consistency.py checks that every page
# reading from assets/ is named here. Everything else on every page is computed live on this server.
SHIPPED_INPUTS: dict[str, str] = {
    "moe": "the trained lite checkpoint (assets/lite.safetensors) supplies the hidden states; at the page's "
           "defaults panels (a)-(c) are shipped results of the same code (assets/precomputed/, made by "
           "`python -m k3lite.experiments.precomputed`, used only while their inputs' fingerprint matches); any change runs "
           "routing and balancing live",
    "attention_residuals": "the heatmap is the shipped lite checkpoint's depth weights, run live on your prompt",
    "kda": "the state animation and the decay panels are the shipped lite checkpoint's KDA layers "
           "(assets/lite.safetensors, trained offline), run live on your prompt",
    "forward_pass": "the shipped lite checkpoint (assets/lite.safetensors, trained offline), run live on your prompt",
    "lab": "the recall sweep and the residual experiment are shipped results (JSON under assets/, made offline by "
           "the CLI); the live training on the page runs here",
}
