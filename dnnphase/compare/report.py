"""How well does the spring-block chain explain the networks? (DESIGN §4)

The two phase diagrams live on different axes — (alpha, knob) for networks,
(friction, noise) for the chain — so they are never compared value by value.
Instead both are *oriented* the way the theory predicts and compared by rank:

* nonlinearity-like axis, increasing: network 1 - alpha (alpha = 0, ReLU, is
  the most nonlinear); chain friction (the row parameter, e.g. mu_right);
* noise-like axis, increasing: network knob in its noisier direction (more
  dropout, larger lr, smaller batch, more label noise); chain noise.

Then:

* phase labels (concave / linear / convex) per cell from the seed-mean
  scale-free curvature with a tolerance band (:func:`phasecore.loadcurve.phase_label`);
* label agreement: each network cell is matched to the chain cell at the same
  *relative rank* position on both oriented axes (nearest quantile), and we
  report the fraction of agreeing cells and Cohen's kappa (agreement beyond
  what the two label frequencies give by chance);
* Spearman rank correlations of mean curvature along every row (noise axis)
  and every column (nonlinearity axis) of each diagram — the theory predicts
  positive along noise and negative along nonlinearity in both;
* accuracy vs curvature: where test accuracy peaks, with a bootstrap interval.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr
from scipy import stats

from dnnphase.knobs import KNOBS, larger_is_noisier
from phasecore.checks import ConfigError
from phasecore.loadcurve import PHASE_TOLERANCE, far_out_fences, phase_label

PHASES = {-1: "concave", 0: "linear", 1: "convex"}


# --- input checks ---------------------------------------------------------------------


def check_network(ds: xr.Dataset, measure: str = "trace_ratio") -> None:
    """Raise ValueError unless ``ds`` is a usable ``dnnphase.sweep`` result."""
    kind = ds.attrs.get("kind", "")
    if kind != "dnnphase.sweep":
        raise ValueError(f"expected a network sweep (dnnphase sweep), got {kind or 'unknown'!r}")
    missing = {"load_curve", "curvature_scaled", "test_accuracy"} - set(ds.data_vars)
    if missing:
        raise ValueError(f"network sweep lacks variables: {', '.join(sorted(missing))}")
    if measure not in ds["measure"].values:
        raise ConfigError(f"measure must be one of {', '.join(map(str, ds['measure'].values))} "
                          f"(got {measure!r})")
    _check_grid(ds["curvature_scaled"].sel(measure=measure), "network")


def check_spring(ds: xr.Dataset) -> None:
    """Raise ValueError unless ``ds`` is a usable ``springblock.phase_diagram`` result."""
    kind = ds.attrs.get("kind", "")
    if kind != "springblock.phase_diagram":
        raise ValueError(f"expected a spring phase diagram (springblock phase), got "
                         f"{kind or 'unknown'!r}")
    missing = {"load_curve", "curvature_scaled"} - set(ds.data_vars)
    if missing:
        raise ValueError(f"spring phase diagram lacks variables: {', '.join(sorted(missing))}")
    _check_grid(ds["curvature_scaled"], "spring")


def _check_grid(curv: xr.DataArray, what: str) -> None:
    if curv.size == 0:
        raise ValueError(f"the {what} phase diagram is empty")
    cell_mean = curv.mean("seed", skipna=True)
    if not np.isfinite(cell_mean).any():
        raise ValueError(f"every cell of the {what} phase diagram is NaN")


# --- oriented grids -------------------------------------------------------------------


def oriented_network(ds: xr.Dataset, measure: str = "trace_ratio") -> xr.Dataset:
    """Network cells on (nonlinearity, noisiness) axes, both increasing.

    Returns a Dataset with dims (nonlinearity, noisiness): ``curvature`` (seed
    mean of the scale-free curvature), ``accuracy`` (seed-mean test
    accuracy), and the original ``alpha`` / knob values as coordinates.
    """
    knob = ds.attrs["knob"]
    larger_noisier = larger_is_noisier(ds)
    curv = ds["curvature_scaled"].sel(measure=measure).mean("seed", skipna=True)
    acc = ds["test_accuracy"].mean("seed", skipna=True)
    out = xr.Dataset({"curvature": curv, "accuracy": acc})
    out = out.sortby("alpha", ascending=False).sortby(knob, ascending=larger_noisier)
    return out.rename({"alpha": "nonlinearity", knob: "noisiness"}).assign_coords(
        alpha=("nonlinearity", out["alpha"].values), knob=("noisiness", out[knob].values))


#: Chain parameters that play the role of nonlinearity (friction) and of noise.
FRICTION_AXES = ("mu_right", "mu_left")
NOISE_AXES = ("noise",)


def chain_axes(ds: xr.Dataset) -> tuple[str, str]:
    """(friction axis, noise axis) of a chain phase diagram, in either order; else an error."""
    dims = tuple(ds["curvature_scaled"].dims[:2])
    friction = [d for d in dims if d in FRICTION_AXES]
    noise = [d for d in dims if d in NOISE_AXES]
    if len(friction) != 1 or len(noise) != 1:
        raise ConfigError(
            f"the chain phase diagram must have a friction axis ({' or '.join(FRICTION_AXES)}) "
            f"and the noise axis to compare with networks (got {' x '.join(dims)})")
    return friction[0], noise[0]


def oriented_spring(ds: xr.Dataset) -> xr.Dataset:
    """Chain cells on (nonlinearity = friction, noisiness = noise) axes, both increasing."""
    friction, noise = chain_axes(ds)
    curv = ds["curvature_scaled"].mean("seed", skipna=True).transpose(friction, noise)
    out = xr.Dataset({"curvature": curv}).sortby(friction).sortby(noise)
    return out.rename({friction: "nonlinearity", noise: "noisiness"}).assign_coords(
        friction=("nonlinearity", out[friction].values),
        chain_noise=("noisiness", out[noise].values))


def _quantiles(n: int) -> np.ndarray:
    return np.linspace(0.0, 1.0, n) if n > 1 else np.array([0.5])


def aligned_labels(spring_labels: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Chain labels (R_s, C_s) sampled at the rank positions of a (R, C) grid."""
    rs, cs = spring_labels.shape
    ri = np.rint(_quantiles(shape[0]) * (rs - 1)).astype(int)
    ci = np.rint(_quantiles(shape[1]) * (cs - 1)).astype(int)
    return spring_labels[np.ix_(ri, ci)]


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Agreement beyond chance between two label arrays (NaN entries ignored)."""
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if a.size == 0:
        return np.nan
    observed = np.mean(a == b)
    chance = sum(np.mean(a == v) * np.mean(b == v) for v in (-1, 0, 1))
    return float((observed - chance) / (1 - chance)) if chance < 1 else np.nan


def rank_correlations(curv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spearman rho of curvature (R, C) along each row (vs column index) and column.

    Returns (rows (R,), cols (C,)); NaN where a line has < 3 finite cells or
    no variation.
    """
    def rho(values):
        ok = np.isfinite(values)
        if ok.sum() < 3 or np.ptp(values[ok]) == 0:
            return np.nan
        return stats.spearmanr(np.arange(values.size)[ok], values[ok]).statistic

    rows = np.array([rho(curv[i]) for i in range(curv.shape[0])])
    cols = np.array([rho(curv[:, j]) for j in range(curv.shape[1])])
    return rows, cols


def accuracy_peak(curvature: np.ndarray, accuracy: np.ndarray, *, n_boot: int = 1000,
                  bins: int = 8, seed: int = 0) -> dict:
    """Where test accuracy peaks as a function of scale-free curvature.

    ``curvature``, ``accuracy``: matching arrays over all cells and seeds.
    Fits accuracy ~ a + b c + q c^2 and reports the vertex -b / (2q) (if
    q < 0, else the best end of the range) with a percentile bootstrap 95 %
    interval over samples, and a binned mean curve. Far-out curvatures (beyond
    Tukey's fences, 3 interquartile ranges outside the quartiles) are left out
    of the fit and counted in ``excluded``: a network that barely separates the
    classes has a tiny drop, so its scale-free curvature can reach -90 and
    would alone decide where a quadratic peaks. ``low`` / ``high``: the range
    kept.
    """
    c = np.asarray(curvature, dtype=float).ravel()
    a = np.asarray(accuracy, dtype=float).ravel()
    ok = np.isfinite(c) & np.isfinite(a)
    c, a = c[ok], a[ok]
    if c.size < 4:
        raise ValueError("accuracy vs curvature needs at least 4 finite samples")
    low, high = far_out_fences(c)
    inside = (c >= low) & (c <= high)
    excluded = int(c.size - inside.sum())
    c, a = c[inside], a[inside]

    def vertex(cc, aa):
        with warnings.catch_warnings():  # few distinct resampled points: ill-conditioned
            warnings.simplefilter("ignore", np.exceptions.RankWarning)
            q, b, _ = np.polyfit(cc, aa, 2)
        lo, hi = cc.min(), cc.max()
        if q < 0:
            return float(np.clip(-b / (2 * q), lo, hi))
        return float(lo if np.polyval([q, b, 0], lo) > np.polyval([q, b, 0], hi) else hi)

    rng = np.random.default_rng(seed)
    boot = np.array([vertex(c[idx], a[idx])
                     for idx in (rng.integers(0, c.size, c.size) for _ in range(n_boot))])
    edges = np.quantile(c, np.linspace(0, 1, bins + 1))
    which = np.clip(np.searchsorted(edges, c, side="right") - 1, 0, bins - 1)
    centres = np.array([c[which == k].mean() if np.any(which == k) else np.nan
                        for k in range(bins)])
    means = np.array([a[which == k].mean() if np.any(which == k) else np.nan
                      for k in range(bins)])
    return {"excluded": excluded, "low": float(low), "high": float(high),
            "peak": vertex(c, a), "peak_low": float(np.quantile(boot, 0.025)),
            "peak_high": float(np.quantile(boot, 0.975)), "bin_curvature": centres,
            "bin_accuracy": means, "spearman_abs": float(
                stats.spearmanr(np.abs(c), a).statistic) if np.ptp(a) > 0 and np.ptp(
                np.abs(c)) > 0 else np.nan}


def row_accuracy_peaks(curvature: np.ndarray, accuracy: np.ndarray, values: np.ndarray,
                       log_scale: bool = False) -> dict[str, np.ndarray]:
    """Per nonlinearity row: where test accuracy peaks along the noise axis, and the boundary.

    ``curvature``, ``accuracy``: (R, C, S) per seed, cells on the oriented
    axes (noise increasing along C); ``values``: (C,) the knob value of each
    column; ``log_scale``: interpolate the boundary in log(value) (knobs whose
    values span decades). Returns arrays of shape (R,):

    * ``peak_value``, ``peak_accuracy``, ``peak_accuracy_se``: the column with
      the highest seed-mean accuracy, and its standard error over seeds;
    * ``tied_low`` / ``tied_high``: the smallest / largest knob value whose
      accuracy is within two standard errors of the difference from the peak
      (cells the seeds cannot tell from it), ``tied_curvature_low`` /
      ``tied_curvature_high`` their seed-mean curvature range;
    * ``boundary_value``: the knob value where seed-mean curvature first
      changes sign along the noise axis, interpolated between the two columns
      (NaN if the row never crosses), and ``boundary_direction``: +1 where it
      turns from concave (< 0) to convex (>= 0), as the theory predicts, -1
      the other way.
    """
    with warnings.catch_warnings():  # a cell whose seeds all diverged is NaN, as it should be
        warnings.simplefilter("ignore", RuntimeWarning)
        curv = np.nanmean(curvature, axis=2)  # (R, C)
        acc = np.nanmean(accuracy, axis=2)  # (R, C)
        n = np.sum(np.isfinite(accuracy), axis=2)
        se = np.nanstd(accuracy, axis=2, ddof=1) / np.sqrt(np.maximum(n, 1))  # (R, C)
    se = np.where(np.isfinite(se), se, 0.0)  # one seed: no error bar to widen the ties
    values = np.asarray(values, dtype=float)
    rows = curv.shape[0]
    out = {k: np.full(rows, np.nan) for k in (
        "peak_value", "peak_accuracy", "peak_accuracy_se", "tied_low", "tied_high",
        "tied_curvature_low", "tied_curvature_high", "boundary_value", "boundary_direction")}
    for i in range(rows):
        if np.isfinite(acc[i]).any():
            j = int(np.nanargmax(acc[i]))
            tied = acc[i] >= acc[i, j] - 2 * np.sqrt(se[i, j] ** 2 + se[i] ** 2)  # (C,)
            out["peak_value"][i], out["peak_accuracy"][i] = values[j], acc[i, j]
            out["peak_accuracy_se"][i] = se[i, j]
            out["tied_low"][i], out["tied_high"][i] = values[tied].min(), values[tied].max()
            if np.isfinite(curv[i, tied]).any():
                out["tied_curvature_low"][i] = np.nanmin(curv[i, tied])
                out["tied_curvature_high"][i] = np.nanmax(curv[i, tied])
        convex = curv[i] >= 0  # (C,); NaN compares False but is excluded below
        finite = np.isfinite(curv[i])
        crossing = np.flatnonzero(finite[:-1] & finite[1:] & (convex[:-1] != convex[1:]))
        if crossing.size:
            j = crossing[0]
            share = -curv[i, j] / (curv[i, j + 1] - curv[i, j])
            ends = np.log(values[j:j + 2]) if log_scale else values[j:j + 2]
            at = ends[0] + share * (ends[1] - ends[0])
            out["boundary_value"][i] = np.exp(at) if log_scale else at
            out["boundary_direction"][i] = 1.0 if convex[j + 1] else -1.0
    return out


# --- the comparison -------------------------------------------------------------------


def compare(spring: xr.Dataset, network: xr.Dataset, *, measure: str = "trace_ratio",
            tolerance: float = PHASE_TOLERANCE) -> xr.Dataset:
    """Compare a chain phase diagram with a network sweep; returns a report Dataset.

    ``tolerance``: half-width of the band of scale-free curvature called
    linear (the same for both diagrams). Cells whose seed mean is NaN (all
    seeds diverged) are masked with a warning.
    """
    check_spring(spring)
    check_network(network, measure)
    if not (np.isfinite(tolerance) and tolerance >= 0):
        raise ConfigError(f"tolerance must be a finite number >= 0 (got {tolerance})")
    net = oriented_network(network, measure)
    chain = oriented_spring(spring)
    for what, cells in (("network", net), ("chain", chain)):
        n_nan = int(np.isnan(cells["curvature"]).sum())
        if n_nan:
            warnings.warn(f"{n_nan} {what} cell(s) have no finite curvature (diverged or no "
                          "drop) and are masked", stacklevel=2)
    net_labels = phase_label(net["curvature"].values, tolerance)
    chain_labels = phase_label(chain["curvature"].values, tolerance)
    chain_on_net = aligned_labels(chain_labels, net_labels.shape)
    ok = np.isfinite(net_labels) & np.isfinite(chain_on_net)
    net_rows, net_cols = rank_correlations(net["curvature"].values)
    chain_rows, chain_cols = rank_correlations(chain["curvature"].values)
    knob = network.attrs["knob"]
    try:
        acc_curv, acc_missing = accuracy_peak(
            network["curvature_scaled"].sel(measure=measure).values,
            network["test_accuracy"].values), ""
    except ValueError as err:  # too few models: report the rest and say why
        acc_curv = {"excluded": 0, "low": np.nan, "high": np.nan,
                    "peak": np.nan, "peak_low": np.nan, "peak_high": np.nan,
                    "bin_curvature": np.full(8, np.nan), "bin_accuracy": np.full(8, np.nan),
                    "spearman_abs": np.nan}
        acc_missing = str(err)
    rows = _row_peaks(network, measure)
    report = xr.Dataset(
        {
            **{f"row_{name}": ("nonlinearity", value) for name, value in rows.items()},
            "network_curvature": (("nonlinearity", "noisiness"), net["curvature"].values,
                                  {"long_name": "seed-mean scale-free curvature"}),
            "network_label": (("nonlinearity", "noisiness"), net_labels,
                              {"long_name": "-1 concave, 0 linear, +1 convex"}),
            "network_accuracy": (("nonlinearity", "noisiness"), net["accuracy"].values),
            "spring_label_aligned": (("nonlinearity", "noisiness"), chain_on_net,
                                     {"long_name": "chain label at the same rank position"}),
            "label_agreement": (("nonlinearity", "noisiness"),
                                np.where(ok, net_labels == chain_on_net, np.nan)),
            "spring_curvature": (("spring_nonlinearity", "spring_noisiness"),
                                 chain["curvature"].values),
            "spring_label": (("spring_nonlinearity", "spring_noisiness"), chain_labels),
            "network_rho_along_noise": ("nonlinearity", net_rows),
            "network_rho_along_nonlinearity": ("noisiness", net_cols),
            "spring_rho_along_noise": ("spring_nonlinearity", chain_rows),
            "spring_rho_along_nonlinearity": ("spring_noisiness", chain_cols),
            "accuracy_bin_curvature": ("curvature_bin", acc_curv["bin_curvature"]),
            "accuracy_bin_mean": ("curvature_bin", acc_curv["bin_accuracy"]),
        },
        coords={
            "alpha": ("nonlinearity", net["alpha"].values),
            knob: ("noisiness", net["knob"].values),
            "friction": ("spring_nonlinearity", chain["friction"].values),
            "chain_noise": ("spring_noisiness", chain["chain_noise"].values),
        },
    )
    agreement = float(np.mean(net_labels[ok] == chain_on_net[ok])) if ok.any() else np.nan
    report.attrs.update({
        "kind": "dnnphase.compare",
        "measure": measure,
        "tolerance": tolerance,
        "knob": knob,
        "label_agreement": agreement,
        "label_cells_compared": int(ok.sum()),
        "label_kappa": cohen_kappa(net_labels, chain_on_net),
        "network_mean_rho_along_noise": float(np.nanmean(net_rows)) if np.isfinite(
            net_rows).any() else np.nan,
        "network_mean_rho_along_nonlinearity": float(np.nanmean(net_cols)) if np.isfinite(
            net_cols).any() else np.nan,
        "spring_mean_rho_along_noise": float(np.nanmean(chain_rows)) if np.isfinite(
            chain_rows).any() else np.nan,
        "spring_mean_rho_along_nonlinearity": float(np.nanmean(chain_cols)) if np.isfinite(
            chain_cols).any() else np.nan,
        "accuracy_peak_curvature": acc_curv["peak"],
        "accuracy_peak_low": acc_curv["peak_low"],
        "accuracy_peak_high": acc_curv["peak_high"],
        "accuracy_spearman_abs_curvature": acc_curv["spearman_abs"],
        "accuracy_fit_excluded": acc_curv["excluded"],
        "accuracy_fit_low": acc_curv["low"],
        "accuracy_fit_high": acc_curv["high"],
        "accuracy_missing": acc_missing,
    })
    return report


def _row_peaks(network: xr.Dataset, measure: str) -> dict[str, np.ndarray]:
    """:func:`row_accuracy_peaks` on the network's cells, rows as in :func:`oriented_network`."""
    knob = network.attrs["knob"]
    cells = xr.Dataset({"curvature": network["curvature_scaled"].sel(measure=measure),
                        "accuracy": network["test_accuracy"]})
    cells = cells.sortby("alpha", ascending=False).sortby(
        knob, ascending=larger_is_noisier(network)).transpose("alpha", knob, "seed")
    return row_accuracy_peaks(cells["curvature"].values, cells["accuracy"].values,
                              cells[knob].values,
                              log_scale=knob in KNOBS and KNOBS[knob].scale == "log")


def _num(value, why: str = "", signed: bool = True) -> str:
    """A number (signed), or ``n/a (why)`` for a part that could not be computed."""
    value = float(value)
    if not np.isfinite(value):
        return f"n/a{f' ({why})' if why else ''}"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def _rho_reason(curvature: xr.DataArray, dim: str, what: str) -> str:
    """Why a rank correlation along ``dim`` could not be computed (shown after n/a)."""
    if curvature.sizes[dim] < 3:
        return f"needs >= 3 {what}"
    return f"needs >= 3 finite cells along the {what}"


def summary(report: xr.Dataset) -> str:
    """A few lines a person reads: the agreement table (``n/a`` says what is missing)."""
    a = report.attrs
    along = {"noise": _rho_reason(report["network_curvature"], "noisiness", f"{a['knob']} values"),
             "nonlinearity": _rho_reason(report["network_curvature"], "nonlinearity",
                                         "alpha values")}
    chain_along = {
        "noise": _rho_reason(report["spring_curvature"], "spring_noisiness", "noise values"),
        "nonlinearity": _rho_reason(report["spring_curvature"], "spring_nonlinearity",
                                    "friction values")}
    kappa = _num(a["label_kappa"], "one phase only")
    ok_cells = report["network_label"].size
    lines = [
        f"measure {a['measure']}, linear band |curvature| <= {a['tolerance']:g}, knob {a['knob']}",
        f"phase-label agreement after orientation: {_num(a['label_agreement'], signed=False)} "
        f"over {a.get('label_cells_compared', ok_cells)} of {ok_cells} network cells "
        f"(Cohen's kappa {kappa})",
        "mean Spearman rho of curvature   along noise   along nonlinearity",
        "  networks                        "
        f"{_num(a['network_mean_rho_along_noise'], along['noise'])}        "
        f"{_num(a['network_mean_rho_along_nonlinearity'], along['nonlinearity'])}",
        "  spring-block chain              "
        f"{_num(a['spring_mean_rho_along_noise'], chain_along['noise'])}        "
        f"{_num(a['spring_mean_rho_along_nonlinearity'], chain_along['nonlinearity'])}",
    ]
    if a.get("accuracy_missing"):
        lines.append(f"test accuracy vs curvature: n/a ({a['accuracy_missing']})")
    else:
        lines.append(
            f"test accuracy peaks at scale-free curvature {a['accuracy_peak_curvature']:+.3f} "
            f"(95% bootstrap {a['accuracy_peak_low']:+.3f} .. {a['accuracy_peak_high']:+.3f}); "
            f"Spearman(|curvature|, accuracy) = "
            f"{_num(a['accuracy_spearman_abs_curvature'])}"
            + (f"; {a['accuracy_fit_excluded']} far-out curvature(s) outside "
               f"{a['accuracy_fit_low']:+.2f} .. {a['accuracy_fit_high']:+.2f} left out"
               if a.get("accuracy_fit_excluded") else ""))
    return "\n".join(lines + row_summary(report))


def row_shape(curvature: np.ndarray) -> str:
    """What a row without a boundary is, from its seed-mean curvatures (C,)."""
    if not np.isfinite(curvature).any():
        return "no finite curvature"
    if np.nanmin(curvature) >= 0:
        return "convex throughout"
    if np.nanmax(curvature) < 0:
        return "concave throughout"
    return "no sign change between neighbouring finite cells"


def row_summary(report: xr.Dataset) -> list[str]:
    """One line per alpha row: the test-accuracy peak, its ties, and the phase boundary."""
    if "row_peak_value" not in report:  # a report written before these were kept
        return []
    knob = report.attrs["knob"]
    values = report[knob].values
    noisier = "larger" if values[-1] >= values[0] else "smaller"
    lines = [f"test accuracy per alpha row (ties: within 2 standard errors of the difference "
             f"from the peak; boundary: where curvature changes sign as {knob} gets noisier, "
             f"i.e. {noisier})"]
    for i in reversed(range(report.sizes["nonlinearity"])):  # ReLU first, as in the figures
        r = report.isel(nonlinearity=i)
        if not np.isfinite(r["row_peak_accuracy"]):
            lines.append(f"  alpha {float(r['alpha']):g}: n/a (no finite accuracy)")
            continue
        boundary = float(r["row_boundary_value"])
        if np.isfinite(boundary):
            turn = "concave -> convex" if r["row_boundary_direction"] > 0 else "convex -> concave"
            where = f"{turn} at {boundary:.3g}"
        else:
            where = f"none ({row_shape(r['network_curvature'].values)})"
        lines.append(
            f"  alpha {float(r['alpha']):g}: {float(r['row_peak_accuracy']):.3f} "
            f"± {float(r['row_peak_accuracy_se']):.3f} at {knob} {float(r['row_peak_value']):g} "
            f"(ties {float(r['row_tied_low']):g}..{float(r['row_tied_high']):g}, curvature "
            f"{_num(r['row_tied_curvature_low'])}..{_num(r['row_tied_curvature_high'])}); "
            f"boundary {where}")
    return lines


# --- the chain fitted to every network cell -------------------------------------------


def fit_chain(network: xr.Dataset, *, measure: str = "trace_ratio", trajectory: bool = False,
              source: str | None = None, **fit_options) -> xr.Dataset:
    """The chain fitted to every cell of a network sweep, labelled, with provenance.

    ``trajectory=False``: :func:`springblock.fit.fit_sweep_final` on each cell's
    seed-mean final load curve of ``measure`` (fast; mu<- / mu-> and the horizon
    fixed). ``trajectory=True``: :func:`springblock.fit.fit_sweep_trajectory` on
    the load curves recorded during training (mu->, mu<-, s and a time scale,
    with 95 % intervals; needs ``record_every`` and the first measure).
    ``fit_options`` go to the fit. The one place both ``dnnphase fit`` and
    ``reproduce`` fit a sweep.
    """
    from dnnphase.compare.fitting import fit_sweep_final, fit_sweep_trajectory
    from phasecore.results import provenance

    check_network(network, measure)
    if trajectory:
        if "load_curve_epochs" not in network:
            raise ConfigError("a trajectory fit needs load curves recorded during training: "
                              "sweep with --record-every")
        fit = fit_sweep_trajectory(network, **fit_options)
    else:
        fit = fit_sweep_final(network, measure=measure, **fit_options)
    config = {"measure": measure, "trajectory": trajectory, "source": source,
              "network_config": network.attrs.get("config"),
              "options": dict(fit_options)}
    fit.attrs.update(provenance("dnnphase.fit", config))
    fit.attrs["knob"] = network.attrs["knob"]
    return fit
