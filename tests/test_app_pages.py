"""Every page renders under AppTest with no exception, and the entry point navigates."""
import pytest
from streamlit.testing.v1 import AppTest

from conftest import PAGE_FILES, ROOT


def test_app_entry_renders_home():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("K3" in t.value for t in at.title)


@pytest.mark.parametrize("page", PAGE_FILES)
def test_page_renders(page):
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=120).run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.title, f"{page} shows no title"


def test_every_page_is_in_navigation():
    src = (ROOT / "app.py").read_text()
    for page in PAGE_FILES:
        assert f'"pages/{page}"' in src, f"{page} is not listed in app.py's st.navigation"
