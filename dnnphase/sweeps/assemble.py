"""A sweep's chunks assembled into one labelled ``xarray.Dataset`` (:func:`assemble`).

Each chunk (:func:`dnnphase.sweeps.sweep.train_chunk`) holds its models' load curves and
scalars by model; :func:`assemble` lays them over the (alpha, knob value, seed) grid, adds
the curvatures and the papers' statistics of every model (:mod:`dnnphase.measures.laws`),
and labels every variable.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from dnnphase import knobs
from dnnphase.measures import laws
from phasecore import loadcurve

__all__ = ["assemble"]


def _on_epochs(chunk: xr.Dataset, epochs: np.ndarray,
               name: str = "load_curve_epochs") -> np.ndarray:
    """A chunk's per-epoch curves ``name`` on the full epoch grid, (m, epochs, L+1).

    A chunk whose models all stopped early has fewer snapshots; a stopped
    model keeps its final state, so later epochs repeat its last snapshot.
    """
    have = chunk["epoch"].values
    last = np.searchsorted(have, epochs, side="right") - 1  # latest snapshot <= epoch
    return chunk[name].values[:, np.clip(last, 0, None)]


def _curvature(curves: np.ndarray, scaled: bool = False) -> np.ndarray:
    """The paper's (or the scale-free) curvature of load curves ``(..., L+1)``; NaN where a
    curve is not finite at every layer (diverged, or a layer whose features have no
    within- or between-class spread: D = -inf or +inf), which has no shape to measure."""
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: masked just below
        values = (loadcurve.curvature_scaled if scaled else loadcurve.curvature)(curves)
    return np.where(np.isfinite(curves).all(axis=-1), values, np.nan)


def _warn_non_finite(curves: np.ndarray, diverged: np.ndarray, measures) -> None:
    """One warning per measure whose load curve is -inf, +inf or NaN at some layer of a
    model that trained (a diverged model's NaN is expected and recorded as diverged)."""
    trained = ~diverged.astype(bool)  # (alpha, value, seed)
    for k, measure in enumerate(measures):
        bad = ~np.isfinite(curves[..., k, :]).all(axis=-1) & trained
        if bad.any():
            warnings.warn(
                f"{int(bad.sum())} of {int(trained.sum())} trained models have a {measure} "
                "load curve that is not finite at some layer (-inf: no within-class spread, "
                "e.g. collapsed features or one sample a class; +inf or NaN: no "
                "between-class spread); the curves are recorded as they are and their "
                "curvatures are NaN", stacklevel=4)


def assemble(chunks, cfg) -> xr.Dataset:
    """The chunks of a sweep with configuration ``cfg`` (a
    :class:`~dnnphase.sweeps.sweep.SweepConfig`) as one Dataset (see
    :func:`dnnphase.sweeps.sweep.sweep` for its variables)."""
    n_a, n_v, n_s = len(cfg.alphas), len(cfg.values), len(cfg.seeds)
    n_l, n_m = cfg.depth + 1, len(cfg.measures)
    seed_pos = {s: k for k, s in enumerate(cfg.seeds)}
    dims = ("alpha", cfg.knob, "seed")
    scalars = ("test_accuracy", "train_accuracy", "train_loss", "epochs_run", "steps_run",
               "diverged")
    arrays = {name: np.full((n_a, n_v, n_s), np.nan) for name in scalars}
    reasons = np.full((n_a, n_v, n_s), "", dtype=object)
    curves = np.full((n_a, n_v, n_s, n_m, n_l), np.nan)
    curves_test = np.full_like(curves, np.nan)
    ncc_test = np.full((n_a, n_v, n_s, n_l), np.nan)
    epochs = np.arange(0, cfg.epochs + 1, cfg.record_every) if cfg.record_every else None
    per_epoch = np.full((n_a, n_v, n_s, len(epochs), n_l), np.nan) if cfg.record_every else None
    per_epoch_test = None if per_epoch is None else np.full_like(per_epoch, np.nan)
    for chunk in chunks:
        ia, iv = chunk["alpha_index"].values, chunk["value_index"].values
        js = np.array([seed_pos[int(s)] for s in chunk["seed_value"].values])
        curves[ia, iv, js] = chunk["load_curve"].values
        for name, into in (("load_curve_test", curves_test),
                           ("ncc_train_centres_test", ncc_test)):
            if name in chunk:  # absent from chunks stored before it was measured
                into[ia, iv, js] = chunk[name].values
        for name in scalars:
            arrays[name][ia, iv, js] = chunk[name].values
        reasons[ia, iv, js] = chunk["diverged_reason"].values.astype(str)
        if per_epoch is not None:
            per_epoch[ia, iv, js] = _on_epochs(chunk, epochs)
            if "load_curve_epochs_test" in chunk:
                per_epoch_test[ia, iv, js] = _on_epochs(chunk, epochs, "load_curve_epochs_test")
    _warn_non_finite(curves, arrays["diverged"], cfg.measures)
    data_vars = {
        "load_curve": (dims + ("measure", "layer"), curves,
                       {"long_name": "separation D per layer (see measure)"}),
        "curvature": (dims + ("measure",), _curvature(curves),
                      {"long_name": "curvature (paper: first minus last gain)"}),
        "curvature_scaled": (dims + ("measure",), _curvature(curves, scaled=True),
                             {"long_name": "scale-free curvature", "units": "1"}),
        "load_curve_test": (dims + ("measure", "layer"), curves_test,
                            {"long_name": "separation D per layer on the test set (see "
                                          "measure; NaN without a test set)"}),
        "curvature_test": (dims + ("measure",), _curvature(curves_test),
                           {"long_name": "curvature of the test-set load curve (paper: first "
                                         "minus last gain)"}),
        "curvature_scaled_test": (dims + ("measure",), _curvature(curves_test, scaled=True),
                                  {"long_name": "scale-free curvature of the test-set load "
                                                "curve", "units": "1"}),
        "test_accuracy": (dims, arrays["test_accuracy"], {"units": "1"}),
        "train_accuracy": (dims, arrays["train_accuracy"], {"units": "1"}),
        "train_loss": (dims, arrays["train_loss"], {"long_name": "final training loss (eval)"}),
        "epochs_run": (dims, arrays["epochs_run"].astype(np.int64), {"units": "epochs"}),
        "steps_run": (dims, arrays["steps_run"].astype(np.int64),
                      {"units": "optimizer steps",
                       "note": "at fixed epochs the batch size sets the number of steps"}),
        "diverged": (dims, arrays["diverged"].astype(bool),
                     {"long_name": "training diverged (see diverged_reason); metrics are NaN"}),
        "diverged_reason": (dims, reasons.astype(str),
                            {"long_name": "why: nan, inf, or exploded (loss > explode_factor "
                                          "x ln C); empty when the model trained"}),
    }
    data_vars |= _law_variables(dims, curves, curves_test, ncc_test, tuple(cfg.measures))
    if per_epoch is not None:
        data_vars["load_curve_epochs"] = (dims + ("epoch", "layer"), per_epoch,
                                          {"long_name": f"{cfg.measures[0]} load curve during "
                                                        "training (eval mode)"})
        data_vars["load_curve_epochs_test"] = (
            dims + ("epoch", "layer"), per_epoch_test,
            {"long_name": f"{cfg.measures[0]} test-set load curve during training (eval mode)"})
    return xr.Dataset(data_vars, coords=_coords(cfg, n_l, epochs))


def _coords(cfg, n_l: int, epochs: np.ndarray | None) -> dict:
    """The result's coordinates: the grid, the measures, the layers and the epochs."""
    coords = {
        "alpha": ("alpha", np.asarray(cfg.alphas, dtype=float),
                  {"long_name": "LeakyReLU negative slope (0 = ReLU)"}),
        cfg.knob: (cfg.knob, np.asarray(cfg.values, dtype=float),
                   {"units": knobs.KNOBS[cfg.knob].units,
                    "noisier": knobs.KNOBS[cfg.knob].noisier}),
        "seed": np.asarray(cfg.seeds),
        "measure": list(cfg.measures),
        "layer": ("layer", np.arange(n_l), {"long_name": "layer (0 = input)"}),
    }
    if epochs is not None:
        coords["epoch"] = ("epoch", epochs, {"units": "epochs"})
    return coords


#: Attributes of He & Su's statistics (:func:`dnnphase.measures.laws.equi_separation`).
_EQUI_ATTRS = {
    "pearson_r": {"long_name": "He & Su: Pearson correlation of log fuzziness with the layer "
                               "index", "units": "1"},
    "decay_ratio": {"long_name": "He & Su: decay ratio rho = exp(slope of log fuzziness per "
                                 "layer)", "units": "1"},
    "half_life": {"long_name": "He & Su: layers that halve the fuzziness, ln 2 / ln(1/rho) "
                               "(inf where it does not decrease)", "units": "layers"},
}
_LAYERS_USED = ("layers 0..L, the input included (He & Su: D_0 from the input); NaN without "
                "the fuzziness measure or where its curve is not finite")


def _law_variables(dims: tuple, curves: np.ndarray, curves_test: np.ndarray,
                   ncc_test: np.ndarray, measures: tuple) -> dict:
    """The papers' statistics per model: He & Su's ``pearson_r``, ``decay_ratio``,
    ``half_life`` of the fuzziness load curve (training and test set), Galanti et al.'s
    ``effective_depth`` from the training NCC curve, and their test NCC with the training
    class centres (:mod:`dnnphase.measures.laws`)."""
    def measure(values: np.ndarray, name: str) -> np.ndarray:  # (..., L+1), NaN if absent
        if name not in measures:
            return np.full(values.shape[:-2] + values.shape[-1:], np.nan)
        return values[..., measures.index(name), :]

    out = {}
    for suffix, values, where in (("", curves, "training"), ("_test", curves_test, "test")):
        stats = laws.equi_separation(measure(values, "fuzziness"))
        for name, attrs in _EQUI_ATTRS.items():
            out[name + suffix] = (dims, stats[name],
                                  {**attrs, "note": f"{where} set; {_LAYERS_USED}"})
    out["effective_depth"] = (dims, laws.effective_depth(measure(curves, "ncc")), {
        "long_name": "Galanti et al.: first hidden layer whose training NCC accuracy reaches "
                     f"{laws.EFFECTIVE_DEPTH_THRESHOLD} (NaN: none; needs the ncc measure)",
        "units": "layers"})
    out["ncc_train_centres_test"] = (dims + ("layer",), ncc_test, {
        "long_name": "Galanti et al.'s test NCC accuracy: test samples classified by the "
                     "nearest training class mean (load_curve_test's ncc uses the test set's "
                     "own means)", "units": "1"})
    return out
