"""README.md is a front page: at most 10 KB, the two commands, links that resolve, and nothing
about how the project was developed."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def test_readme_is_at_most_10_kb():
    assert README.stat().st_size <= 10 * 1024, f"README.md is {README.stat().st_size} bytes; move detail to docs/"


def test_readme_gives_the_two_commands_and_its_links_resolve():
    text = README.read_text()
    assert "make book" in text and "make test" in text and "APD_DATA_DIR" in text
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        assert (REPO / target).exists(), f"README.md links to {target}, which does not exist"


def test_readme_and_docs_do_not_speak_of_how_they_were_developed():
    for path in [README, *sorted((REPO / "docs").glob("*.md"))]:
        text = path.read_text()
        found = re.findall(r"\bissue \d+|\bsession\b|\bwas lent\b", text)
        assert not found, f"{path.name}: {found}"


def test_the_readme_example_prints_what_it_shows():
    """The example runs as a script too: no line ends on a bare value that a notebook would show
    and a script would drop."""
    import ast

    from test_installed import readme_example

    bare = [
        ast.unparse(s)
        for s in ast.parse(readme_example()).body
        if isinstance(s, ast.Expr)
        and not (isinstance(s.value, ast.Call) and getattr(s.value.func, "id", None) == "print")
    ]
    assert not bare, f"print these in the README's example: {bare}"
