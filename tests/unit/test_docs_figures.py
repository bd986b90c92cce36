"""The documentation's benchmark figures are the committed results files', not numbers typed by hand."""

from tests import REPOSITORY_ROOT

RESULTS = REPOSITORY_ROOT / "bench" / "results"
PAGE = REPOSITORY_ROOT / "docs" / "benchmarks.md"
SECTIONS = {
    "results.md": (
        "## Per path",
        "## Nested vs inline",
        "## HTTP front door",
        "## Latency",
        "## Throughput",
        "## Duplicate storms",
    ),
    "console.md": ("# Benchmark: the console with many executions",),
}


def table_after(text: str, title: str) -> str:
    start = text.index("\n|", text.index(title)) + 1
    return text[start : text.index("\n\n", start)]


def test_the_benchmarks_page_shows_the_committed_results_tables():
    page = PAGE.read_text(encoding="utf-8")
    for results_file, titles in SECTIONS.items():
        results = (RESULTS / results_file).read_text(encoding="utf-8").rstrip() + "\n\n"
        for title in titles:
            assert table_after(results, title) in page, (results_file, title)
