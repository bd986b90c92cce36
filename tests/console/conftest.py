"""The console in Debian's headless Chromium, driven by Selenium through Debian's chromedriver."""

from __future__ import annotations

import functools
import http.server
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

from tests.console.showcase import Showcase, showcase

PAGE_DEADLINE_SECONDS = 15
WINDOW_SIZE = "1400,1000"
# As root, headless, and with nothing reaching for the network this machine does not have.
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
    f"--window-size={WINDOW_SIZE}",
]


def chromium(user_data_dir: str, *flags: str) -> webdriver.Chrome:
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if browser is None or driver is None:
        raise RuntimeError("Debian's chromium and chromium-driver are missing: run `make browser` as root")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={user_data_dir}", *flags]:
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(executable_path=driver))


@pytest.fixture(scope="session")
def browser() -> Iterator[webdriver.Chrome]:
    with tempfile.TemporaryDirectory(prefix="console-browser-") as profile:
        driver = chromium(profile)
        try:
            yield driver
        finally:
            driver.quit()


@pytest.fixture(scope="module")
def served() -> Iterator[Showcase]:
    with showcase(actions=True) as scenes:
        yield scenes


class Page:
    """The console at one endpoint: open a view, wait for what it draws."""

    def __init__(self, driver: webdriver.Chrome, url: str) -> None:
        self.driver = driver
        self.url = url

    def open(self, hash_route: str = "#/") -> Page:
        self.driver.get(f"{self.url}{hash_route}")
        # A fresh load per view: the hash alone would not reload the page between tests.
        self.driver.refresh()
        self.wait_for(lambda: self.driver.find_element(By.ID, "main").get_attribute("aria-busy") == "false")
        return self

    def wait_for(self, condition: Callable[[], Any], deadline: float = PAGE_DEADLINE_SECONDS) -> Any:
        return WebDriverWait(self.driver, deadline).until(lambda _: condition())

    def one(self, css: str) -> WebElement:
        found: WebElement = self.wait_for(lambda: next(iter(self.all(css)), None))
        return found

    def all(self, css: str) -> list[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def error_banner(self) -> str:
        banner = self.driver.find_element(By.ID, "error")
        return "" if not banner.is_displayed() else banner.text


@pytest.fixture
def page(browser: webdriver.Chrome, served: Showcase) -> Page:
    return Page(browser, served.url)


@contextmanager
def static_site(folder: Path) -> Iterator[str]:
    """``folder``'s files on a loopback port of their own (another origin than any served cloud)."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass
