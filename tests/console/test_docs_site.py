"""The documentation site in the browser: the flow's Mermaid graph renders from the copy the site
ships (no CDN), as a reader sees it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

from tests import REPOSITORY_ROOT
from tests.console.conftest import static_site

pytestmark = pytest.mark.browser
BUILD_DEADLINE_SECONDS = 300
RENDER_DEADLINE_SECONDS = 30
MIN_DIAGRAM_HEIGHT_PX = 150  # the flow's diagram; the unrendered text block has no div.mermaid


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--site-dir", str(folder)],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        timeout=BUILD_DEADLINE_SECONDS,
        check=True,
    )
    with static_site(folder) as url:
        yield url


def test_the_flows_graph_renders_from_the_shipped_mermaid(browser: webdriver.Chrome, site: str):
    # When a reader opens the page on the flow
    browser.get(f"{site}/concepts/flow/")

    # Then the Mermaid block became a drawing (Material draws it in a closed shadow root, so its
    # size is what shows), by the copy the site ships: no script comes from a CDN
    def drawn_height() -> float:
        heights: list[float] = browser.execute_script(
            "return Array.from(document.querySelectorAll('div.mermaid'))"
            ".map((element) => element.getBoundingClientRect().height)"
        )
        return max(heights, default=0.0)

    WebDriverWait(browser, RENDER_DEADLINE_SECONDS).until(lambda _: drawn_height() > MIN_DIAGRAM_HEIGHT_PX)
    assert browser.find_elements(By.CSS_SELECTOR, "pre.mermaid") == []
    assert browser.execute_script("return typeof mermaid") == "object"
    sources = [script.get_attribute("src") or "" for script in browser.find_elements(By.TAG_NAME, "script")]
    assert any(source.endswith("javascripts/vendor/mermaid.min.js") for source in sources)
    assert not [source for source in sources if source.startswith("http") and site not in source]
