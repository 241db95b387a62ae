"""The two protocols He & Su's and Galanti et al.'s rows read (:mod:`~.he_su`, :mod:`~.galanti`):
the authors' (the reference, ``figures/separation_laws_authors``, written by
``python scripts/separation_laws.py``) and ours (``figures/separation_laws``, written by
``--protocol ours``: the files committed first), and the settings of the files a row reads
that still differ from the authors'.

The rule, fixed before any file of the authors' protocol was computed:

* an experiment's rows read the authors' files (the reference) when every sweep of the
  experiment (:func:`dnnphase.sweeps.separation_laws.sweeps_of`) is there, each stored
  with its paper's own measurement (its configuration's ``protocol``: ``"he_su"`` or
  ``"galanti"``); else they read ours and say that the reference is not computed;
* with the authors' files as the reference, the same rule run on our files is the variant
  :data:`OUR_VARIANT` (its numbers follow the reference's in the row): a row is robust only
  where both protocols reach its verdict;
* every row that reads files lists the settings that still differ from the authors'
  (:func:`differing_settings`), read from the stored configuration of the files it reads.

The rule of the rerun under other CPU kernels, fixed before any of its files was computed:

* the authors' protocol rerun under the kernels of another machine (:data:`KERNELS`, the
  "baseline" setting of ``python -m tests.portability``: PyTorch's loops at the 128-bit
  vector width, MKL's compatible branch, OpenBLAS's SSE3 kernels, numba for a generic
  x86-64) writes :data:`FOLDERS` ``["kernels"]``; an experiment's rerun counts when every
  sweep of it is there under its paper's measurement and each file's stored ``kernels``
  shows those settings;
* where the reference is the authors' files and the rerun counts, the same rule run on the
  rerun is the variant :data:`KERNEL_VARIANT` (its numbers follow the others in the row): a
  row whose verdict differs there is fragile; where it does not count, the row says that
  the rerun is not computed and how to compute it.

The rule of the papers' scale, fixed before any of its files was computed:

* the authors' protocol at the papers' own scale (``--full``: 600 epochs for He & Su, 500
  for Galanti et al., with their schedules, five seeds, Galanti's full-scale network and
  data) writes :data:`FOLDERS` ``["full"]``; an experiment's files there count when every
  sweep of it is there under its paper's measurement and with its paper's epochs;
* the reference stays the authors' protocol at the committed scale (every experiment has
  it, and the other-kernel rerun repeats it exactly); where those files are the reference
  and the papers' scale counts, the same rule run on the papers' scale is the variant
  :data:`SCALE_VARIANT` (its numbers follow the others in the row): a row whose verdict
  differs there is fragile, its verdict depending on how long and with how many seeds the
  networks were trained; where it does not count, the row says so and gives the command.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import xarray as xr

from phaseclaims.ledger import Claim

__all__ = ["COMMANDS", "FOLDERS", "KERNELS", "KERNEL_VARIANT", "OUR_VARIANT", "PROTOCOLS",
           "SCALE_VARIANT", "command", "differing_settings", "folder", "judged",
           "kernels_rerun", "open_sweep", "papers_scale", "reference", "stored_protocol"]

#: The reference first; "kernels" is the reference's protocol rerun under :data:`KERNELS`,
#: "full" the reference's protocol at the papers' scale.
PROTOCOLS = ("authors", "ours", "kernels", "full")
#: Another machine's CPU kernels (tests/portability.py's "baseline" setting; a test keeps
#: the two equal).
KERNELS = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE",
           "OPENBLAS_CORETYPE": "Prescott", "NUMBA_CPU_NAME": "generic"}
FOLDERS = {"authors": "figures/separation_laws_authors", "ours": "figures/separation_laws",
           "kernels": "figures/separation_laws_kernels",
           "full": "figures/separation_laws_authors/full"}
COMMANDS = {"authors": "python scripts/separation_laws.py --only {}",
            "ours": "python scripts/separation_laws.py --protocol ours --only {}",
            "kernels": ("env " + " ".join(f"{k}={v}" for k, v in KERNELS.items())
                        + " python scripts/separation_laws.py figures/separation_laws_kernels"
                        " --only {}"),
            "full": "python scripts/separation_laws.py --full --workers 1 --only {}"}
#: The variants' names in a row's ``variants``.
OUR_VARIANT = "our protocol"
KERNEL_VARIANT = "other CPU kernels"
SCALE_VARIANT = "papers' scale"
#: Each paper's own measurement (:mod:`dnnphase.networks.protocol`), by its sweeps' prefix.
_MEASUREMENT = {"hesu": "he_su", "galanti": "galanti"}
#: The papers' epochs (He & Su's appendix A; Galanti et al.'s code and §5).
_EPOCHS = {"hesu": 600, "galanti": 500}


def _paper(stem: str) -> str:
    return "galanti" if stem.startswith("galanti") else "hesu"


def folder(protocol: str) -> str:
    """The folder (relative to a checkout) of ``protocol``'s files."""
    return FOLDERS[protocol]


def command(protocol: str, experiment: str) -> str:
    """The command that computes ``experiment``'s files under ``protocol``."""
    return COMMANDS[protocol].format(experiment)


def stored_protocol(ds: xr.Dataset) -> str:
    """The measurement a sweep file was computed with (files from before the option:
    ``"ours"``)."""
    return json.loads(ds.attrs.get("config", "{}")).get("protocol", "ours")


def _counts(ds: xr.Dataset, stem: str, protocol: str) -> bool:
    """Whether a file of ``protocol``'s folder is what the folder stands for: the authors',
    the rerun's and the papers' scale's under its paper's measurement, the rerun's under
    :data:`KERNELS`, the papers' scale's with its paper's epochs."""
    if protocol == "ours":
        return True
    if stored_protocol(ds) != _MEASUREMENT[_paper(stem)]:
        return False
    if protocol == "kernels":
        stored = json.loads(ds.attrs.get("kernels", "{}"))
        return all(stored.get(k) == v for k, v in KERNELS.items())
    if protocol == "full":
        return json.loads(ds.attrs["config"]).get("epochs") == _EPOCHS[_paper(stem)]
    return True


def open_sweep(root: Path, stem: str, protocol: str = "ours") -> xr.Dataset | None:
    """``<root>/<protocol's folder>/<stem>.nc``, loaded; None where it is not there, or
    where it is not what its folder stands for (computed with another measurement than its
    paper's; the rerun's, under other kernels than :data:`KERNELS`)."""
    path = Path(root) / FOLDERS[protocol] / f"{stem}.nc"
    if not path.exists():
        return None
    with xr.open_dataset(path) as ds:
        ds = ds.load()
    return ds if _counts(ds, stem, protocol) else None


def _complete(root: Path, experiment: str, protocol: str) -> bool:
    """Whether every sweep of ``experiment`` is in ``protocol``'s folder and counts."""
    from dnnphase.sweeps.separation_laws import sweeps_of

    for stem in sweeps_of(experiment, "authors"):
        path = Path(root) / FOLDERS[protocol] / f"{stem}.nc"
        if not path.exists():
            return False
        with xr.open_dataset(path) as ds:
            if not _counts(ds, stem, protocol):
                return False
    return True


def reference(root: Path, experiment: str) -> str:
    """"authors" where every sweep of ``experiment`` is in the authors' folder under its
    paper's measurement, else "ours"."""
    return "authors" if _complete(root, experiment, "authors") else "ours"


def kernels_rerun(root: Path, experiment: str) -> bool:
    """Whether the rerun of ``experiment`` under :data:`KERNELS` counts (every sweep there,
    each under its paper's measurement and those kernels)."""
    return _complete(root, experiment, "kernels")


def papers_scale(root: Path, experiment: str) -> bool:
    """Whether ``experiment``'s files at the papers' scale count (every sweep there, each
    under its paper's measurement and with its paper's epochs)."""
    return _complete(root, experiment, "full")


def differing_settings(root: Path, experiment: str, protocol: str) -> str:
    """What the files of ``experiment`` under ``protocol`` still do otherwise than the
    authors (read from the first sweep's stored configuration); "" where no file is."""
    from dnnphase.sweeps.separation_laws import sweeps_of

    ds = next((d for d in (open_sweep(root, s, protocol) for s in
                           sweeps_of(experiment, protocol)) if d is not None), None)
    if ds is None:
        return ""
    cfg = json.loads(ds.attrs["config"])
    paper, epochs = _paper(experiment), int(cfg["epochs"])
    items = []
    if epochs != _EPOCHS[paper]:
        items.append(f"{epochs} of their {_EPOCHS[paper]} epochs")
    if cfg.get("norm") == "batchnorm":
        items.append("an input BatchNorm neither paper's network has")
    if cfg.get("dataset", "fashion-mnist") not in ("fashion-mnist", "mnist5k"):
        items.append(f"the data set {cfg['dataset']} in place of theirs")
    if paper == "hesu":
        if cfg.get("optimizer") == "adam" and len(cfg.get("values", ())) == 1:
            items.append(f"Adam at lr {cfg['values'][0]:g} fixed (theirs chosen by their rule)")
        drops = cfg.get("lr_drops") or []
        if any(math.floor(f * epochs + 0.5) != math.floor(f * epochs) for f in drops):
            items.append("lr drops after ⌊E/3 + ½⌋ and ⌊2E/3 + ½⌋ epochs (theirs ⌊E/3⌋, "
                         "⌊2E/3⌋)")
        items.append("pixels in [0, 1] (theirs (x − 0.5)/0.5)")
    else:
        if cfg.get("dataset") == "fashion-mnist":
            size = cfg.get("size") or 28
            items.append(f"Fashion-MNIST ({cfg.get('n_train') or 60000} images at {size} × "
                         f"{size}) in place of their CIFAR-10, without augmentation")
        if experiment == "galanti_fig3":
            if cfg.get("width", 500) != 500:
                items.append(f"width {cfg['width']} (their MLP-10-500)")
            items.append("the CDNV from the whole training set (theirs: from its batches in "
                         "eval mode, the last partial one left out)")
    if protocol == "ours":
        items.append(
            ("our measurement (eval-mode BatchNorm, D_0 after the input BatchNorm) and the "
             "last partial batch dropped" + ("; Wide-Narrow 1 000 × 3 then 100 × 4, no Mixed"
                                           if experiment == "hesu_fig4" else "")
             if paper == "hesu" else
             "our training (lr 0.01 constant, no warm-up) and layers (after the ReLU)")
            + f"; the authors' protocol not computed ({command('authors', experiment)})")
    return "still differs from the authors': " + "; ".join(items)


def _with_variant(rows: list[Claim], others: list[Claim], name: str) -> list[Claim]:
    """The reference's rows with the verdict of ``others`` (the same rule on other files) as
    the variant ``name`` and its numbers after theirs (a row whose files the others lack
    keeps no such variant)."""
    by_id = {row.id: row for row in others}
    out = []
    for row in rows:
        other = by_id.get(row.id)
        if other is None or not other.files or not row.files:
            out.append(row)
            continue
        out.append(replace(row, ours=f"{row.ours}; {name}: {other.ours}",
                           variants={**row.variants, name: other.verdict}))
    return out


def judged(root: Path, experiment: str,
           build: Callable[[Path, str], list[Claim]]) -> list[Claim]:
    """An experiment's rows by the module's rule: ``build(root, protocol)`` on the
    reference's files, the variant from ours, and the settings that still differ."""
    root = Path(root)
    protocol = reference(root, experiment)
    rows = build(root, protocol)
    notes = [differing_settings(root, experiment, protocol)]
    if protocol == "authors":
        rows = _with_variant(rows, build(root, "ours"), OUR_VARIANT)
        if kernels_rerun(root, experiment):
            rows = _with_variant(rows, build(root, "kernels"), KERNEL_VARIANT)
        else:
            notes.append(f"{KERNEL_VARIANT}: not computed ({command('kernels', experiment)})")
        if papers_scale(root, experiment):
            rows = _with_variant(rows, build(root, "full"), SCALE_VARIANT)
        else:
            notes.append(f"{SCALE_VARIANT}: not computed ({command('full', experiment)})")
    notes = "; ".join(filter(None, notes))
    return [replace(row, why="; ".join(filter(None, (row.why, notes))))
            if row.files and notes else row for row in rows]
