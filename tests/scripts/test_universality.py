"""scripts/universality.py (Figs. S5, S6, S7a, S7b) end to end at its quick scale, its
refusals, and the ledger rows read from what it writes."""

import shutil
from pathlib import Path

import pytest

from dnnphase import data
from dnnphase.sweeps import universality
from phaseclaims import universality as ledger
from phaseclaims.ledger import VERDICTS
from tests.scripts.refusals import refused, script_main

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "universality.py"


def _main():
    return script_main("universality")


def _refused(argv, capsys) -> str:
    return refused(_main(), argv, capsys)


def test_quick_figures_end_to_end_then_reused_and_read_by_the_ledger(tmp_path, capsys):
    folder = tmp_path / universality.SCALE_FOLDERS["reduced"]
    assert _main()([str(folder), "--quick", "--only", "S7a,S7b"]) == 0
    names = [*universality.FIGURES["S7a"], *universality.FIGURES["S7b"]]
    for name in names:
        assert (folder / f"{name}.nc").is_file() and (folder / f"{name}.png").stat().st_size
    out = capsys.readouterr().out
    assert "Fig. S7a:" in out and "Fig. S7b:" in out
    before = (folder / f"{names[0]}.nc").stat().st_mtime_ns
    figure = folder / f"{names[0]}.png"
    figure.write_bytes(b"the committed figure")  # kept: a figure is a view of its file
    assert _main()([str(folder), "--quick", "--only", "S7a"]) == 0  # reused, not retrained
    out = capsys.readouterr().out
    assert "reusing" in out and f"kept {figure}" in out and "--redraw" in out
    assert (folder / f"{names[0]}.nc").stat().st_mtime_ns == before
    assert figure.read_bytes() == b"the committed figure"
    assert _main()([str(folder), "--quick", "--only", "S7a", "--redraw"]) == 0
    assert figure.read_bytes()[:4] == b"\x89PNG"  # drawn again from its file
    assert (folder / f"{names[0]}.nc").stat().st_mtime_ns == before

    rows = {row.id: row for row in ledger.claims(tmp_path)}
    diagrams = [i for i in rows if i.endswith(")") and "pooled" not in i]
    assert len(diagrams) == sum(len(d) for d in universality.FIGURES.values())
    for figure in ("S7a", "S7b"):
        row = next(r for i, r in rows.items() if i.startswith(f"Fig. {figure} "))
        assert row.files and row.verdict in VERDICTS  # at the quick scale, any of them
        assert "quick scale" in row.why and "best p" in row.ours and "ties p" in row.ours
    assert rows["Fig. S5 (depth 3)"].verdict == "cannot"  # not written here
    assert "not committed" in rows["Fig. S5 (depth 3)"].why
    assert rows["Fig. S8, S9"].verdict == "cannot" and "offline" in rows["Fig. S8, S9"].why

    # Another scale's diagram in the folder is refused, before any work.
    assert "another configuration" in _refused([str(folder), "--only", "S7a"], capsys)

    # A finer scale's finished file, where there is one, is what a row reads, and says so;
    # the width-100 row reads what the depth-7 row reads (the same networks), uncounted.
    finer = tmp_path / universality.SCALE_FOLDERS["paper-grid"]
    finer.mkdir(parents=True)
    shutil.copyfile(folder / f"{names[0]}.nc", finer / f"{names[0]}.nc")
    shutil.copyfile(folder / f"{names[0]}.nc", finer / "S5_depth7.nc")
    rows = {row.id: row for row in ledger.claims(tmp_path)}
    row = rows["Fig. S7a (Fashion-MNIST, Adam)"]
    assert row.files == (f"{universality.SCALE_FOLDERS['paper-grid']}/{names[0]}.nc",)
    assert row.command.endswith("--only S7a --paper-grid") and "quick scale" in row.why
    assert rows["Fig. S7b (Fashion-MNIST, SGD momentum 0.9)"].files[0].startswith(
        f"{ledger.FOLDER}/S7b")  # no finer file: the folder's own
    depth7, width100 = rows["Fig. S5 (depth 7)"], rows["Fig. S6 (width 100)"]
    assert width100.files == depth7.files and width100.ours == depth7.ours
    assert depth7.counts and not width100.counts and "counted there" in width100.why


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--only", "S9"], "only must be one or more of S5, S6, S7a, S7b"),
    (["--only", "S5,S5"], "only"),
    (["--workers", "0"], "workers"),
    (["--full", "--quick"], "not allowed with"),
    (["--paper-grid", "--full"], "not allowed with"),
    (["--banana"], "unrecognized arguments"),
    (["--scheduler", "threads"], "scheduler"),
    (["--quick", "--scheduler", "banana"], "scheduler"),
])
def test_bad_options_are_one_line_before_any_work(tmp_path, capsys, argv, fragment):
    folder = tmp_path / "out"
    assert fragment in _refused([str(folder), *argv], capsys)
    assert not folder.exists()


def test_missing_fashion_mnist_names_the_package_and_root(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(data.DEFAULT_ROOTS, "fashion-mnist",
                        (str(tmp_path / "absent"), "dataset-fashion-mnist"))
    from dnnphase.sweeps import sweep

    sweep._data.cache_clear()  # the machine's own files may be cached from another test
    folder = tmp_path / "out"
    line = _refused([str(folder), "--only", "S7b"], capsys)
    sweep._data.cache_clear()
    assert "dataset-fashion-mnist" in line and "--root" in line
    assert not folder.exists()


def test_a_diagram_with_another_ones_configuration_is_its_twin(tmp_path):
    """S5's depth 7 and S6's width 100 are the same networks: one file serves both."""
    from dnnphase.sweeps.named_sweeps import twin
    from dnnphase.sweeps.sweep import sweep

    configs = universality.configs("quick", "S5,S6")
    names = list(configs)
    assert configs["S5_depth7"] == configs["S6_width100"]
    sweep(configs["S5_depth7"], output=tmp_path / "S5_depth7.nc")
    assert twin(tmp_path, "S6_width100", configs["S6_width100"], names) == \
        tmp_path / "S5_depth7.nc"
    assert twin(tmp_path, "S6_width25", configs["S6_width25"], names) is None


def test_an_existing_figure_is_not_drawn_from_sweeps_computed_now(tmp_path, capsys):
    """A figure whose sweep this run would compute is another result: replaced only with
    --redraw, refused before any work without it."""
    name = next(iter(universality.FIGURES["S7a"]))
    (tmp_path / f"{name}.png").write_bytes(b"a committed figure")
    err = _refused([str(tmp_path), "--quick", "--only", "S7a"], capsys)
    assert f"{name}.png' exists" in err and name in err and "--redraw" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{name}.png"]


def test_odd_folders_are_refused_before_any_work(tmp_path, capsys):
    """The figure scripts share their checks (dnnphase.sweeps.named_sweeps.check_folder)."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert "folder must be a folder name" in _refused(["", "--quick", "--only", "S7a"], capsys)
    assert "is a file, not a folder" in _refused([str(afile / "sub"), "--quick", "--only",
                                                  "S7a"], capsys)
    (tmp_path / "taken" / "S7a_fashion_adam.png").mkdir(parents=True)
    assert "is a folder where the figure goes" in _refused(
        [str(tmp_path / "taken"), "--quick", "--only", "S7a"], capsys)


def test_the_paper_grid_is_the_papers_grid_at_its_first_five_seeds():
    """Fixed before any of its networks trained: 6 alphas x 16 dropout rates (the paper's,
    the full scale's) x seeds 0-4, 100 epochs; its own folder, never the reduced one's."""
    grid, full = universality.SCALES["paper-grid"], universality.SCALES["full"]
    assert grid["alphas"] == full["alphas"] == (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    assert grid["values"] == full["values"] and len(grid["values"]) == 16
    assert grid["values"][0] == 0.0 and grid["values"][-1] == 0.3
    assert grid["seeds"] == (0, 1, 2, 3, 4) and grid["epochs"] == full["epochs"] == 100
    folders = universality.SCALE_FOLDERS
    assert set(folders) == set(universality.SCALES)
    assert len(set(folders.values())) == len(folders)  # no scale writes into another's
    configs = universality.configs("paper-grid")
    assert len(configs) == 11 and configs["S5_depth7"] == configs["S6_width100"]
