"""The README and docs/*.md stay true to the code: their Python snippets run, the dotted names
they mention exist, their command lines parse, and their tables match the committed results."""

import importlib
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
PACKAGES = ("springblock", "dnnphase", "phasecore")
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```", flags=re.S | re.M)
# a package name not inside a path or a longer name, then at least one attribute
DOTTED = re.compile(r"(?<![\w./-])(?:springblock|dnnphase|phasecore)(?:\.[A-Za-z_]\w*)+")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _dotted_names() -> list[tuple[str, str]]:
    """(page, name) for every package-qualified dotted name in an inline code span."""
    found = {}
    for page in PAGES:
        prose = FENCE.sub("", page.read_text())  # code blocks are tested by running/parsing
        for span in re.findall(r"`([^`\n]+)`", prose):
            for name in DOTTED.findall(span):
                found.setdefault((_rel(page), name.rstrip(".")), None)
    return list(found)


def _command_lines() -> list[tuple[str, list[str]]]:
    """(page, argv) for every shell command in a non-Python code block that runs one of the
    two command lines (``&&`` chains split, comments and line continuations removed)."""
    commands = []
    for page in PAGES:
        for lang, body in FENCE.findall(page.read_text()):
            if lang.strip() not in ("", "bash", "sh", "shell", "console"):
                continue
            for line in body.replace("\\\n", " ").splitlines():
                try:
                    words = shlex.split(line, comments=True)
                except ValueError:  # not shell (e.g. a listing of files)
                    continue
                command = []
                for word in [*words, "&&"]:
                    if word in ("&&", "||", ";", "|"):
                        if command and command[0] in ("springblock", "dnnphase"):
                            commands.append((_rel(page), command))
                        command = []
                    else:
                        command.append(word)
    return commands


NAMES = _dotted_names()
COMMANDS = _command_lines()


def _resolve(name: str):
    """Import the longest module prefix of ``name``, then look the rest up as attributes."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        module_name = ".".join(parts[:n])
        try:
            obj = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            # A prefix of the name is no module (``a.b.C.d``: ``a.b.C``): look further up;
            # anything else is a real module failing to import something it needs.
            if not (module_name + ".").startswith(err.name + "."):
                raise
            continue
        for k, attr in enumerate(parts[n:], start=n):
            assert hasattr(obj, attr), (
                f"{name}: {'.'.join(parts[:k])} has no attribute {attr!r}")
            obj = getattr(obj, attr)
        return obj
    raise AssertionError(f"{name}: no such module")


def test_the_docs_mention_dotted_names_and_commands():
    """The collectors below find what they are meant to find (else the tests test nothing)."""
    names = {name for _, name in NAMES}
    assert {"springblock.theory", "dnnphase.measures.separation_numpy"} <= names, sorted(names)
    programs = {(argv[0], argv[1]) for _, argv in COMMANDS}
    assert {("springblock", "simulate"), ("springblock", "phase"), ("springblock", "plot"),
            ("dnnphase", "sweep"), ("dnnphase", "reproduce"), ("dnnphase", "fit")} <= programs


@pytest.mark.parametrize("page,name", NAMES, ids=[f"{p}:{n}" for p, n in NAMES])
def test_a_dotted_name_in_the_docs_exists(page, name):
    _resolve(name)


def _parser(program: str):
    if program == "springblock":
        from springblock.cli import build_parser
    else:
        from dnnphase.cli import build_parser
    return build_parser()


@pytest.mark.parametrize("page,argv", COMMANDS,
                         ids=[f"{p}:{' '.join(a[:2])}#{i}" for i, (p, a) in enumerate(COMMANDS)])
def test_a_command_line_in_the_docs_parses(page, argv, capsys):
    """Parsed by the command's own parser, exactly as ``phasecore.commandline.run`` parses it
    (unknown options are errors), without running the command."""
    parser = _parser(argv[0])
    try:
        args, unknown = parser.parse_known_args(argv[1:])
    except SystemExit as stop:
        if stop.code == 0 and {"-h", "--help"} & set(argv):
            return  # a help line: it printed the usage, as it should
        pytest.fail(f"{page}: {shlex.join(argv)!r} does not parse (exit {stop.code}): "
                    f"{capsys.readouterr().err.strip()}")
    assert not unknown, f"{page}: {shlex.join(argv)!r}: unrecognized arguments {unknown}"
    assert args.command == argv[1] and callable(args.func)


@pytest.mark.parametrize("code", SNIPPETS, ids=[f"snippet{i}" for i in range(len(SNIPPETS))])
def test_readme_snippet_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # snippets that write files write them here
    exec(compile(code, str(README), "exec"), {"__name__": "readme"})


RESULTS = ROOT / "docs" / "results.md"


def test_the_paper_table_is_the_one_the_committed_reports_give(capsys):
    import runpy

    runpy.run_path(str(ROOT / "scripts" / "paper_table.py"), run_name="table")["main"](
        str(ROOT / "figures" / "paper"))
    table = capsys.readouterr().out
    assert table.count("\n") >= 8
    assert table in RESULTS.read_text(), \
        f"docs/results.md does not hold the table scripts/paper_table.py prints:\n{table}"


@pytest.mark.parametrize("script", ["prediction.py", "trajectory_fits.py", "reversal.py"])
def test_the_scripts_answer_help_and_bad_input_in_one_line(script, tmp_path, capsys):
    import runpy

    cli = runpy.run_path(str(ROOT / "scripts" / script), run_name="script")
    cli = cli.get("cli", cli["main"])
    with pytest.raises(SystemExit) as done:
        cli(["--help"])
    assert done.value.code == 0 and "usage:" in capsys.readouterr().out
    if script == "reversal.py":  # a folder without the paper's sweeps (nothing is computed)
        expected = "no such result file"
    else:  # a chain diagram where a network sweep belongs
        (tmp_path / "dnn_dropout.nc").write_bytes(
            (ROOT / "figures" / "spring_phase.nc").read_bytes())
        expected = "springblock.phase_diagram"
    with pytest.raises(SystemExit) as done:
        cli([str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert done.value.code == 2 and ": error: " in err and "\n" not in err, err
    assert expected in err


def test_sweeps_agree_script_on_one_folder_against_itself(tmp_path, capsys):
    import runpy

    script = runpy.run_path(str(ROOT / "scripts" / "sweeps_agree.py"), run_name="script")
    paper = ROOT / "figures" / "paper"
    rows = script["table"](paper, paper).splitlines()[2:]
    assert len(rows) == len(list(paper.glob("dnn_*.nc"))) >= 4
    assert all("| all | 0.00 / 0.00 | 0 | 0.00 / 0.00 | 0 |" in row for row in rows), rows
    with pytest.raises(SystemExit) as done:
        script["main"]([str(paper), str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert done.value.code == 2 and "no dnn_<knob>.nc is in both" in err and "\n" not in err
