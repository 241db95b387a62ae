"""Add He & Su's and Galanti et al.'s per-model statistics to network sweeps computed before
a sweep measured them, from their stored load curves (no retraining).

    python scripts/derive_laws.py [FILE ...] [--overwrite]

For each sweep FILE (default: the paper's diagrams, ``figures/paper/dnn_*.nc``), adds
``pearson_r``, ``decay_ratio`` and ``half_life`` (He & Su, of the training fuzziness load
curve over layers 0..L) and ``effective_depth`` (Galanti et al., the first hidden layer whose
training NCC accuracy reaches 0.99), computed by the very function a new sweep's assembly
calls (:func:`dnnphase.sweeps.assemble._law_variables`, which calls
:mod:`dnnphase.measures.laws`), with the same names, dimensions and attributes.

Idempotent: a file that holds these variables already with the same values and attributes
is left as it is. One that holds any of them with other values is refused (exit 2, one line,
before any file is written) unless ``--overwrite``. Each file is replaced atomically, and
only after the written copy has been read back and every other variable, coordinate and
attribute compared with the original bit for bit (NaN included); a difference leaves the
original untouched.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import xarray as xr

from phasecore import results
from phasecore.checks import ConfigError
from phasecore.commandline import Parser, run

#: The variables this script adds: what every sweep carries since they were measured.
DERIVED = ("pearson_r", "decay_ratio", "half_life", "effective_depth")
#: Where they come from, on each variable.
NOTE = ("derived from the stored load curves by scripts/derive_laws.py, without retraining "
        "(the function a new sweep's assembly calls)")
DEFAULT = "figures/paper/dnn_*.nc"


def derived_variables(network: xr.Dataset) -> dict[str, xr.DataArray]:
    """The :data:`DERIVED` variables of a sweep (alpha, knob, seed), from its ``load_curve``
    (alpha, knob, seed, measure, layer): NaN where the fuzziness (He & Su) or the ncc
    (Galanti et al.) measure is missing or its curve is not finite."""
    from dnnphase.sweeps.assemble import _law_variables

    knob = network.attrs.get("knob")
    dims = ("alpha", knob, "seed")
    if knob not in network.dims or "depth" in network.dims or "load_curve" not in network:
        raise ConfigError("input must be a network sweep (alpha, <knob>, seed) with a "
                          "load_curve and no depth axis (got dims "
                          f"{', '.join(map(str, network.dims))})")
    measures = tuple(str(m) for m in network["measure"].values)
    if not {"fuzziness", "ncc"} & set(measures):
        raise ConfigError("input must hold the fuzziness or the ncc measure (got "
                          f"{', '.join(measures)})")
    curves = network["load_curve"].transpose(*dims, "measure", "layer").values
    empty = np.full_like(curves, np.nan)
    made = _law_variables(dims, curves, empty, empty[..., 0, :], measures)
    coords = {name: network[name] for name in dims}
    return {name: xr.DataArray(made[name][1], dims=made[name][0], coords=coords,
                               attrs={**made[name][2], "derived": NOTE}) for name in DERIVED}


def same_bits(a: xr.DataArray, b: xr.DataArray) -> bool:
    """Whether two variables hold the same dims, dtype, attributes and values bit for bit
    (NaN equal to NaN of the same bits)."""
    if a.dims != b.dims or a.dtype != b.dtype or a.attrs != b.attrs:
        return False
    x, y = np.asarray(a.values), np.asarray(b.values)
    if x.shape != y.shape:
        return False
    if x.dtype.kind in "OUS":
        return bool((x == y).all())
    return np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(y).tobytes()


def differences(before: xr.Dataset, after: xr.Dataset, skip=()) -> list[str]:
    """The names of variables, coordinates and global attributes (``attrs``) that differ
    between two Datasets, leaving out ``skip``."""
    names = (set(before.variables) | set(after.variables)) - set(skip)
    out = sorted(n for n in names if n not in before.variables or n not in after.variables
                 or not same_bits(before[n].variable, after[n].variable))
    return out + (["attrs"] if before.attrs != after.attrs else [])


def plan(path: Path, overwrite: bool) -> tuple[xr.Dataset, dict] | None:
    """The file's sweep and the variables to write into it; None where it holds them
    already; a ConfigError where it holds other values of them and not ``overwrite``."""
    network = results.load(path, kind="dnnphase.sweep")
    derived = derived_variables(network)
    present = [n for n in DERIVED if n in network]
    changed = [n for n in present if not same_bits(network[n], derived[n])]
    if changed and not overwrite:
        raise ConfigError(f"{str(path)!r} holds {', '.join(changed)} with other values; "
                          "pass --overwrite to replace them")
    if len(present) == len(DERIVED) and not changed:
        return None
    return network, derived


def write(path: Path, network: xr.Dataset, derived: dict) -> None:
    """Replace ``path`` atomically by ``network`` with ``derived``, after checking the
    written copy: every other variable and attribute bit for bit, the derived ones as
    given."""
    updated = network.drop_vars([n for n in derived if n in network]).assign(derived)

    def write_checked(tmp: Path) -> None:
        updated.to_netcdf(tmp, engine=results.ENGINE)
        with xr.open_dataset(tmp, engine=results.ENGINE) as back:
            back = back.load()
        changed = differences(network, back, skip=DERIVED)
        wrong = [n for n in DERIVED if not same_bits(back[n], updated[n])]
        if changed or wrong:
            raise RuntimeError(f"the copy of {str(path)!r} differs in "
                               f"{', '.join(changed + wrong)}; the file was left as it was")

    results.replace_atomically(path, write_checked)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path,
                        help=f"network sweeps (default {DEFAULT})")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace these variables where a file holds other values of them")

    def derive(args) -> int:
        files = args.files or sorted(Path().glob(DEFAULT))
        if not files:
            raise ConfigError(f"files: none given and none match {DEFAULT}")
        plans = {path: plan(path, args.overwrite) for path in files}  # all checked first
        for path, todo in plans.items():
            if todo is None:
                print(f"{path}: has {', '.join(DERIVED)} already, unchanged")
                continue
            network, derived = todo
            done = "replaced" if any(n in network for n in DERIVED) else "added"
            write(path, network, derived)
            print(f"{path}: {done} {', '.join(DERIVED)}")
        return 0

    parser.set_defaults(func=derive)
    return run(parser, argv)


if __name__ == "__main__":
    sys.exit(main())
