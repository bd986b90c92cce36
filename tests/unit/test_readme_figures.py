"""The README's benchmark figures are the committed results file's, not numbers typed by hand."""

from tests import REPOSITORY_ROOT

SECTIONS = (
    "## Per path",
    "## Nested vs inline",
    "## HTTP front door",
    "## Latency",
    "## Throughput",
    "## Duplicate storms",
)


def table_after(text: str, title: str) -> str:
    start = text.index("\n|", text.index(title)) + 1
    return text[start : text.index("\n\n", start)]


def test_the_readme_shows_the_committed_results_tables():
    results = (REPOSITORY_ROOT / "bench" / "results" / "results.md").read_text(
        encoding="utf-8"
    ).rstrip() + "\n\n"
    readme = (REPOSITORY_ROOT / "README.md").read_text(encoding="utf-8")
    benchmarks = readme[readme.index("## Benchmarks") : readme.index("## Layout")]
    for title in SECTIONS:
        assert table_after(results, title) in benchmarks, title
