"""What every script's bad input must give: exit status 2 and one line on stderr."""

import runpy
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def script_main(name: str):
    """``scripts/<name>.py``'s ``main``, loaded without running the script."""
    return runpy.run_path(str(SCRIPTS / f"{name}.py"), run_name="script")["main"]


def refused(call, argv, capsys) -> str:
    """Run ``call(argv)`` (a script's entry point, which may return or raise SystemExit);
    assert it stopped with status 2 and one line on stderr, and return that line."""
    try:
        code = call(argv)
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    return err
