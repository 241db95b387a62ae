"""The record of issue 32's move: dnnphase in folders along the data's path.

    python tools/relayout.py          # moves what is still to move, rewrites names

Idempotent: run again after merging a branch that still uses the old layout, it
moves nothing that has moved and rewrites the old module paths, file paths and
imports that branch wrote (in code, tests, benchmarks, scripts, README and docs;
CHANGELOG.md keeps the names of its time). Result kinds stored in files
(``"dnnphase.tune"``, ``"dnnphase.experiments.<name>"``) are names of what a file
holds, not module paths, and are left as they are so that committed results stay
readable and byte-identical.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: old module -> new module (dotted).
MODULES = {
    "dnnphase.architecture": "dnnphase.networks.architecture",
    "dnnphase.model": "dnnphase.networks.mlp",
    "dnnphase.cnn": "dnnphase.networks.cnn",
    "dnnphase.stack": "dnnphase.networks.stack",
    "dnnphase.normkernel": "dnnphase.networks.fused_layer",
    "dnnphase.maskkernel": "dnnphase.networks.mask_kernel",
    "dnnphase.randomness": "dnnphase.networks.randomness",
    "dnnphase.train": "dnnphase.training.train",
    "dnnphase.loop": "dnnphase.training.loop",
    "dnnphase.optim": "dnnphase.training.optim",
    "dnnphase.schedule": "dnnphase.training.schedule",
    "dnnphase.metrics": "dnnphase.measures.separation_numpy",
    "dnnphase.separation": "dnnphase.measures.separation_torch",
    "dnnphase.measure": "dnnphase.measures.load_curve",
    "dnnphase.phase": "dnnphase.sweeps.sweep",
    "dnnphase.tune": "dnnphase.sweeps.tune",
    "dnnphase.tunesearch": "dnnphase.sweeps.tune_search",
    "dnnphase.memory": "dnnphase.sweeps.memory",
    "dnnphase.experiments": "dnnphase.sweeps.experiments",
    "dnnphase.plotting": "dnnphase.sweeps.plotting",
    "dnnphase.compare.text": "dnnphase.compare.words",
    "springblock.budget": "springblock.memory",
    "springblock.rng": "springblock.randomness",
}

#: Names ``import dnnphase`` still gives (dnnphase.__all__): ``from dnnphase import
#: metrics`` stays valid outside the package itself.
PUBLIC = {"dnnphase.metrics", "dnnphase.separation"}

#: The scripts that recompute committed results: docs/ -> scripts/ (those of the move,
#: and any a merged branch adds to docs/ or scripts/).
SCRIPTS = sorted({"cnn_dropout", "fuzziness_cutoff", "horizons", "linear_network",
                  "paper_table", "prediction", "reanalyse", "reversal", "sweeps_agree",
                  "train_test", "trajectory_fits", "tune_evaluation"}
                 | {p.stem for folder in ("docs", "scripts") for p in (ROOT / folder).glob("*.py")})

#: old test file (tests/) -> new path under tests/.
TESTS = {
    "test_architecture": "dnnphase/networks/test_architecture",
    "test_cnn": "dnnphase/networks/test_cnn",
    "test_norm": "dnnphase/networks/test_mlp",
    "test_fused_layer": "dnnphase/networks/test_fused_layer",
    "test_randomness": "dnnphase/networks/test_randomness",
    "test_train": "dnnphase/training/test_train",
    "test_schedule": "dnnphase/training/test_schedule",
    "test_metrics": "dnnphase/measures/test_separation_numpy",
    "test_separation": "dnnphase/measures/test_separation_torch",
    "test_measure": "dnnphase/measures/test_load_curve",
    "test_sweep": "dnnphase/sweeps/test_sweep",
    "test_test_curves": "dnnphase/sweeps/test_test_curves",
    "test_tune": "dnnphase/sweeps/test_tune",
    "test_experiments": "dnnphase/sweeps/test_experiments",
    "test_compare": "dnnphase/compare/test_compare",
    "test_disagreement": "dnnphase/compare/test_disagreement",
    "test_prediction": "dnnphase/compare/test_prediction",
    "test_data": "dnnphase/test_data",
    "test_engine": "phasecore/test_sweeps",
    "test_loadcurve": "phasecore/test_loadcurve",
    "test_events": "springblock/test_events",
    "test_physics": "springblock/test_physics",
    "test_theory": "springblock/test_theory",
    "test_rng": "springblock/test_randomness",
    "test_springblock_cli": "springblock/test_cli",
    "test_springblock_limits": "springblock/test_cli_limits",
    "test_fit": "springblock/fit/test_fit",
    "test_integrator": "springblock/fit/test_integrator",
    "test_fuzziness_cutoff": "scripts/test_fuzziness_cutoff",
    "test_tune_evaluation": "scripts/test_tune_evaluation",
    "test_reversal_choice": "scripts/test_reversal",
    "test_tune_cases": "scripts/test_tune_cases",
    "test_tune_caveat": "dnnphase/sweeps/test_tune_caveat",
    "test_bad_input": "cross/test_bad_input",
    "test_bad_input_more": "cross/test_bad_input_more",
    "test_interrupt": "cross/test_interrupt",
    "test_chain_interrupt": "cross/test_chain_interrupt",
    "test_readme": "cross/test_readme",
    "test_cuda": "cross/test_cuda",
}

#: Stored result kinds that look like module paths: never rewritten.
KINDS = ["dnnphase.tune", "dnnphase.experiments.linear_network",
         "dnnphase.experiments.cnn_dropout"]

SKIP_DIRS = {".git", ".venv", "__pycache__", "build", "dist", ".ruff_cache", ".pytest_cache"}
SKIP_FILES = {"tools/relayout.py", "CHANGELOG.md"}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout


def module_path(dotted: str) -> Path:
    return ROOT / (dotted.replace(".", "/") + ".py")


def move(old: Path, new: Path) -> None:
    """git mv old new, unless done; a package __init__.py for each new folder."""
    if not old.exists():
        return
    if new.exists():
        sys.exit(f"both {old} and {new} exist: merge them by hand")
    new.parent.mkdir(parents=True, exist_ok=True)
    git("mv", str(old.relative_to(ROOT)), str(new.relative_to(ROOT)))
    print(f"moved {old.relative_to(ROOT)} -> {new.relative_to(ROOT)}")


def moves() -> None:
    for old, new in MODULES.items():
        move(module_path(old), module_path(new))
    for new in MODULES.values():  # each new folder a package (setuptools finds packages)
        init = module_path(new).parent / "__init__.py"
        if not init.exists():
            init.write_text('"""(the folder\'s contents: to be described)"""\n')
            git("add", str(init.relative_to(ROOT)))
    for name in SCRIPTS:
        move(ROOT / "docs" / f"{name}.py", ROOT / "scripts" / f"{name}.py")
    for old, new in TESTS.items():
        move(ROOT / "tests" / f"{old}.py", ROOT / "tests" / f"{new}.py")
    # Test folders are packages (tests/ is one: `from tests.rounding import ...`).
    for folder in sorted((ROOT / "tests").rglob("*")):
        if folder.is_dir() and folder.name not in SKIP_DIRS and any(folder.glob("test_*.py")):
            init = folder / "__init__.py"
            if not init.exists():
                rel = folder.relative_to(ROOT / "tests")
                init.write_text(f'"""Tests of {str(rel).replace("/", ".")}."""\n')
                git("add", str(init.relative_to(ROOT)))


def _alternation(names) -> str:
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


_DOTTED = re.compile(r"(?<![\w.])(" + _alternation(set(MODULES) - PUBLIC) + r")(?![\w])")
#: dnnphase.metrics and dnnphase.separation stay valid names, but no longer modules to import.
_PUBLIC_IMPORT = re.compile(r"^([ \t]*(?:from|import) )(" + _alternation(PUBLIC) + r")\b", re.M)
_FILE = re.compile(r"(?<![\w/])(" + _alternation(
    m.replace(".", "/") + ".py" for m in MODULES) + r")(?![\w])")
_SCRIPT = re.compile(r"(?<![\w/])docs/(" + _alternation(SCRIPTS) + r")\.py\b")
_SCRIPT_PATH = re.compile(r"""(["'])docs\1 / (["'])(""" + _alternation(SCRIPTS)
                          + r""")\.py\2""")
_TEST = re.compile(r"(?<![\w/])tests/(" + _alternation(TESTS) + r")\.py\b")
_TEST_MODULE = re.compile(r"(?<![\w.])tests\.(" + _alternation(TESTS) + r")\b")
_KIND = re.compile(r"""(["'])(""" + _alternation(KINDS) + r""")\1""")
_FROM_PKG = re.compile(r"^(?P<indent>[ \t]*)from (?P<pkg>dnnphase|springblock|dnnphase\.compare)"
                       r" import (?P<names>[\w ,]+?)(?P<tail>[ \t]*(#.*)?)$", re.M)
_RELATIVE = re.compile(r"^(?P<indent>[ \t]*)from \.(?P<mod>\w+) import ", re.M)
_RELATIVE_PACKAGE = re.compile(r"^(?P<indent>[ \t]*)from \. import (?P<name>\w+)$", re.M)


def _from_package(match: re.Match, in_init: bool) -> str:
    """``from dnnphase import stack, knobs`` -> one import per new home."""
    pkg, indent = match["pkg"], match["indent"]
    names = [n.strip() for n in match["names"].split(",") if n.strip()]
    kept, lines = [], []
    for entry in names:
        name, _, alias = (p.strip() for p in entry.partition(" as "))
        old = f"{pkg}.{name}"
        if old in MODULES and (in_init or old not in PUBLIC):
            new_pkg, _, new_name = MODULES[old].rpartition(".")
            local = alias or name
            lines.append(f"{indent}from {new_pkg} import {new_name}"
                         + ("" if local == new_name else f" as {local}"))
        else:
            kept.append(entry)
    if not lines:
        return match[0]
    if kept:
        lines.insert(0, f"{indent}from {pkg} import {', '.join(kept)}")
    lines[0] += match["tail"]
    return "\n".join(lines)


def _absolute(text: str, rel: str) -> str:
    """Relative imports in dnnphase/ and springblock/ naming an old module -> absolute."""
    parts = rel[:-3].split("/")
    package = ".".join(parts[:-1]) if parts[-1] != "__init__" else ".".join(parts[:-1])
    top = parts[0]
    old_top = {m.rpartition(".")[2] for m in MODULES if m.count(".") == 1
               and m.startswith(top + ".")}

    def fix_package(m: re.Match) -> str:  # from . import x
        name = m["name"]
        if module_path(f"{package}.{name}").exists() or (ROOT / package.replace(".", "/")
                                                        / name).is_dir():
            return m[0]
        return f"{m['indent']}from {top} import {name}"

    text = _RELATIVE_PACKAGE.sub(fix_package, text)

    def fix(m: re.Match) -> str:
        mod = m["mod"]
        if module_path(f"{package}.{mod}").exists() or (ROOT / package.replace(".", "/")
                                                       / mod).is_dir():
            return m[0]
        if mod in old_top or package != top:
            return f"{m['indent']}from {top}.{mod} import "
        return m[0]

    return _RELATIVE.sub(fix, text)


def rewrite(text: str, rel: str) -> str:
    kinds = {}

    def hide(m: re.Match) -> str:
        key = f"\0KIND{len(kinds)}\0"
        kinds[key] = m[0]
        return key

    text = _KIND.sub(hide, text)
    if rel.endswith(".py") and rel.split("/")[0] in ("dnnphase", "springblock"):
        text = _absolute(text, rel)
    if rel.endswith(".py"):
        in_init = rel in ("dnnphase/__init__.py",)
        text = _FROM_PKG.sub(lambda m: _from_package(m, in_init), text)
    text = _DOTTED.sub(lambda m: MODULES[m[1]], text)
    text = _PUBLIC_IMPORT.sub(lambda m: m[1] + MODULES[m[2]], text)
    text = _FILE.sub(lambda m: MODULES[m[1][:-3].replace("/", ".")].replace(".", "/") + ".py",
                     text)
    text = _SCRIPT.sub(r"scripts/\1.py", text)
    text = _SCRIPT_PATH.sub(r'\1scripts\1 / \2\3.py\2', text)
    text = _TEST.sub(lambda m: f"tests/{TESTS[m[1]]}.py", text)
    text = _TEST_MODULE.sub(lambda m: "tests." + TESTS[m[1]].replace("/", "."), text)
    if rel.startswith("tests/") and rel.count("/") > 1:
        depth = rel.count("/")  # tests/a/b/test_x.py -> the root is parents[3]
        text = re.sub(r"Path\(__file__\)(\.resolve\(\))?\.(parents\[1\]|parent\.parent)"
                      r"(?!\.parent)",
                      lambda m: f"Path(__file__){m[1] or ''}.parents[{depth}]", text)
    for key, kind in kinds.items():
        text = text.replace(key, kind)
    return text


def files():
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if any(part in SKIP_DIRS for part in rel.parts) or str(rel) in SKIP_FILES:
            continue
        if path.is_file() and (path.suffix in (".py", ".md", ".toml", ".cfg", ".yml", ".yaml")
                               or str(rel) == ".ci/run"):
            if rel.parts[0] == "figures" and path.suffix != ".md":
                continue
            yield path, str(rel)


def main() -> None:
    moves()
    changed = []
    for path, rel in files():
        text = path.read_text()
        new = rewrite(text, rel)
        if new != text:
            path.write_text(new)
            changed.append(rel)
    for rel in changed:
        print(f"rewrote {rel}")
    py = [r for r in changed if r.endswith(".py")]
    if py:  # imports sorted again where a rewrite moved one
        subprocess.run([sys.executable, "-m", "ruff", "check", "-q", "--select", "I", "--fix",
                        *py], cwd=ROOT, check=False)


if __name__ == "__main__":
    main()
