"""`make screenshots`: the console's main views over the demo's scenarios, saved to docs/console/.

The same served engine and the same headless Chromium as the browser tests; run it after changing
the console, look at the pictures, and commit them (the README and the console guide show them).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from urllib.parse import quote

from tests.console.conftest import Page, chromium
from tests.console.showcase import Showcase, showcase

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = REPOSITORY_ROOT / "docs" / "console"


def views(scenes: Showcase) -> dict[str, str]:
    """file name -> the console route it shows."""

    def execution(arn: str) -> str:
        return f"#/execution?arn={quote(arn, safe='')}"

    return {
        "state-machines.png": "#/",
        "machine.png": f"#/machine?arn={quote(scenes.service.state_machine_arn, safe='')}",
        "execution-replayed.png": execution(scenes.row("duplicate (client resend)").result.arn),
        "execution-failed.png": execution(scenes.row("failing order (released)").result.arn),
        "records.png": f"#/records?table={scenes.service.table_name}",
    }


def main() -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with showcase(actions=False) as scenes, tempfile.TemporaryDirectory(prefix="console-shots-") as profile:
        driver = chromium(profile)
        try:
            page = Page(driver, scenes.url)
            for name, route in views(scenes).items():
                page.open(route)
                driver.save_screenshot(str(SCREENSHOTS / name))
                print(f"wrote docs/console/{name}")
        finally:
            driver.quit()


if __name__ == "__main__":
    main()
