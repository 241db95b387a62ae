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
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import xarray as xr

from dnnphase.compare.claims.ledger import Claim

__all__ = ["COMMANDS", "FOLDERS", "OUR_VARIANT", "PROTOCOLS", "command", "differing_settings",
           "folder", "judged", "open_sweep", "reference", "stored_protocol"]

#: The reference first.
PROTOCOLS = ("authors", "ours")
FOLDERS = {"authors": "figures/separation_laws_authors", "ours": "figures/separation_laws"}
COMMANDS = {"authors": "python scripts/separation_laws.py --only {}",
            "ours": "python scripts/separation_laws.py --protocol ours --only {}"}
#: The variant's name in a row's ``variants``.
OUR_VARIANT = "our protocol"
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


def open_sweep(root: Path, stem: str, protocol: str = "ours") -> xr.Dataset | None:
    """``<root>/<protocol's folder>/<stem>.nc``, loaded; None where it is not there, or
    (the authors' folder) where it was computed with another measurement than its paper's."""
    path = Path(root) / FOLDERS[protocol] / f"{stem}.nc"
    if not path.exists():
        return None
    with xr.open_dataset(path) as ds:
        ds = ds.load()
    if protocol == "authors" and stored_protocol(ds) != _MEASUREMENT[_paper(stem)]:
        return None
    return ds


def reference(root: Path, experiment: str) -> str:
    """"authors" where every sweep of ``experiment`` is in the authors' folder under its
    paper's measurement, else "ours"."""
    from dnnphase.sweeps.separation_laws import sweeps_of

    for stem in sweeps_of(experiment, "authors"):
        path = Path(root) / FOLDERS["authors"] / f"{stem}.nc"
        if not path.exists():
            return "ours"
        with xr.open_dataset(path) as ds:
            if stored_protocol(ds) != _MEASUREMENT[_paper(stem)]:
                return "ours"
    return "authors"


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


def _with_variant(rows: list[Claim], ours: list[Claim]) -> list[Claim]:
    """The reference's rows with our protocol's verdict as a variant and its numbers after
    theirs (a row whose files ours lacks keeps no variant)."""
    by_id = {row.id: row for row in ours}
    out = []
    for row in rows:
        other = by_id.get(row.id)
        if other is None or not other.files or not row.files:
            out.append(row)
            continue
        out.append(replace(row, ours=f"{row.ours}; {OUR_VARIANT}: {other.ours}",
                           variants={**row.variants, OUR_VARIANT: other.verdict}))
    return out


def judged(root: Path, experiment: str,
           build: Callable[[Path, str], list[Claim]]) -> list[Claim]:
    """An experiment's rows by the module's rule: ``build(root, protocol)`` on the
    reference's files, the variant from ours, and the settings that still differ."""
    root = Path(root)
    protocol = reference(root, experiment)
    rows = build(root, protocol)
    if protocol == "authors":
        rows = _with_variant(rows, build(root, "ours"))
    settings = differing_settings(root, experiment, protocol)
    return [replace(row, why="; ".join(filter(None, (row.why, settings))))
            if row.files and settings else row for row in rows]
