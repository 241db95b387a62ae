"""The API reference (mkdocs.yml, docs/api/) builds from the docstrings without a warning,
and names every module directly inside each package (a folder's modules come with it:
``show_submodules``), so a new module cannot be left out of it."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("springblock", "dnnphase", "phasecore")


def test_the_api_reference_builds_with_warnings_as_errors(tmp_path):
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                          str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    page = (tmp_path / "site" / "dnnphase" / "index.html").read_text()
    for anchor in ("dnnphase.sweeps.sweep.sweep", "dnnphase.measures.load_curve.measure_model",
                   "dnnphase.networks.architecture.Architecture"):
        assert f'id="{anchor}"' in page, anchor
    assert 'id="springblock.ensemble.simulate"' in (
        tmp_path / "site" / "springblock" / "index.html").read_text()


def test_every_module_is_in_the_api_reference():
    named = set()
    for page in (ROOT / "docs" / "api").glob("*.md"):
        named |= set(re.findall(r"^::: ([\w.]+)", page.read_text(), flags=re.M))
    for package in PACKAGES:
        for path in sorted((ROOT / package).iterdir()):
            if path.name.startswith(("_", ".")) or not (
                    path.suffix == ".py" or (path / "__init__.py").exists()):
                continue
            module = f"{package}.{path.stem}"
            assert module in named, f"{module} is not in docs/api/ (add '::: {module}')"
