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
