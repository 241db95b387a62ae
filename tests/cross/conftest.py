"""What the cross-cutting suites share: the API reference's site, built once per session."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The built site's pages (the reference's by name, the guide's as ``guide/<name>``)
    and its search index, from ``mkdocs build --strict`` (warnings are errors)."""
    out = tmp_path_factory.mktemp("api") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                          str(out)], cwd=ROOT, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (out / "search" / "search_index.js").exists()  # search without a server (offline)
    return {path.stem: path.read_text() for path in out.glob("*.html")} | {
        f"guide/{path.stem}": path.read_text() for path in out.glob("guide/*.html")} | {
        "search_index": (out / "search" / "search_index.json").read_text()}
