"""Every Python snippet in the README runs as written."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_has_python_snippets():
    assert len(SNIPPETS) >= 2


@pytest.mark.parametrize("code", SNIPPETS, ids=[f"snippet{i}" for i in range(len(SNIPPETS))])
def test_readme_snippet_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # snippets that write files write them here
    exec(compile(code, str(README), "exec"), {"__name__": "readme"})


def test_the_paper_table_is_the_one_the_committed_reports_give(capsys):
    import runpy

    root = README.parent
    runpy.run_path(str(root / "docs" / "paper_table.py"), run_name="table")["main"](
        str(root / "figures" / "paper"))
    table = capsys.readouterr().out
    assert table.count("\n") >= 8 and table in README.read_text()
