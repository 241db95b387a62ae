"""Results in words: the lines a person reads after a comparison.

* :func:`summary` — the agreement table of a comparison report, ``n/a (why)``
  where a number could not be computed, where the chain's curvature changes the
  other way from the networks' (:func:`disagreement_summary`), then one line per
  alpha row (:func:`row_summary`);
* :func:`dictionary_summary` — the paper's dictionary read off the effective
  force (an :func:`dnnphase.compare.comparator.dictionary.effective_force_table`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from dnnphase.compare.comparator.peaks import row_shape

__all__ = ["boundary_summary", "dictionary_summary", "sign_words", "summary", "tied_set", "where"]


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
    """A few lines a person reads: the agreement table (``n/a`` says what is missing).

    Parameters
    ----------
    report : xarray.Dataset
        A :func:`compare` result.

    Returns
    -------
    str
        The lines, joined by newlines.
    """
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
        lines += peak_summary(a)
        lines.append(
            f"  Spearman(|curvature|, accuracy) = {_num(a['accuracy_spearman_abs_curvature'])}"
            + (f"; {a['accuracy_fit_excluded']} far-out curvature(s) outside "
               f"{a['accuracy_fit_low']:+.2f} .. {a['accuracy_fit_high']:+.2f} left out"
               if a.get("accuracy_fit_excluded") else ""))
        if "accuracy_test_curve_peak_curvature" in a:
            lines += peak_summary(a, "accuracy_test_curve", "the test set's curvature")
    return "\n".join(lines + disagreement_summary(report) + row_summary(report))


def peak_summary(attrs: dict, prefix: str = "accuracy",
                 against: str = "scale-free curvature") -> list[str]:
    """Where test accuracy peaks against curvature: the quadratic's vertex and the best
    bin, their 95 % intervals over resampled cells, and whether they agree."""
    if "accuracy_binned_peak_curvature" not in attrs:  # a report from before the bins
        return [f"test accuracy peaks at {against} {attrs[f'{prefix}_peak_curvature']:+.3f} "
                f"(95% bootstrap {attrs[f'{prefix}_peak_low']:+.3f} .. "
                f"{attrs[f'{prefix}_peak_high']:+.3f})"]
    q, q_lo, q_hi = (attrs[f"{prefix}_peak{k}"] for k in ("_curvature", "_low", "_high"))
    b, b_lo, b_hi = (attrs[f"{prefix}_binned_peak{k}"] for k in ("_curvature", "_low", "_high"))
    lines = [f"test accuracy vs {against} (95% intervals resampling cells): quadratic peak "
             f"{q:+.2f} ({q_lo:+.2f} .. {q_hi:+.2f}), best of 8 equal-count bins {b:+.2f} "
             f"({b_lo:+.2f} .. {b_hi:+.2f})"]
    if not q_lo <= b <= q_hi:
        lines.append("  the best bin lies outside the quadratic's interval: a parabola's "
                     "vertex is set by the whole range, tails included; the bins are the "
                     "local reading")
    return lines


def tied_set(values, tied) -> str:
    """The knob values tied with a row's best, as a set: ``{0.003, 0.01, 0.2}``."""
    chosen = sorted(float(v) for v, t in zip(values, tied, strict=True) if t)
    return "{" + ", ".join(f"{v:g}" for v in chosen) + "}"


def boundary_summary(report: xr.Dataset) -> str:
    """One line per knob: in how many rows the best cell ties with a cell flanking the
    concave -> convex boundary."""
    a = report.attrs
    if "rows_with_boundary" not in a:
        return ""
    n_rows = report.sizes["nonlinearity"]
    return (f"in {a['rows_tied_adjacent_to_boundary']} of {a['rows_with_boundary']} rows with "
            f"a boundary ({n_rows} rows in all) the best cell ties with a cell next to the "
            f"boundary")


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
        ties = (tied_set(values, r["row_tied"].values) if "row_tied" in r
                else f"{float(r['row_tied_low']):g}..{float(r['row_tied_high']):g}")
        steps = (f", {float(r['row_peak_to_boundary_steps']):.1f} grid steps from the best"
                 if "row_peak_to_boundary_steps" in r
                 and np.isfinite(r["row_peak_to_boundary_steps"]) else "")
        lines.append(
            f"  alpha {float(r['alpha']):g}: {float(r['row_peak_accuracy']):.3f} "
            f"± {float(r['row_peak_accuracy_se']):.3f} at {knob} {float(r['row_peak_value']):g} "
            f"(ties {ties}, curvature "
            f"{_num(r['row_tied_curvature_low'])}..{_num(r['row_tied_curvature_high'])}); "
            f"boundary {where}{steps}")
    if boundary_summary(report):
        lines.append("  " + boundary_summary(report))
    return lines


# --- where the two disagree -------------------------------------------------------------

_CHANGE = {1.0: "rises (more convex)", -1.0: "falls (more concave)",
           0.0: "is flat or not monotone"}


def where(chosen, values, name: str) -> str:
    """Words for the lines ``chosen`` (bool (n,)) among ``values`` (n,), in oriented order:
    ``"noise >= 0.016"`` for a tail, ``"alpha 0.2 .. 0.6"`` for a run, else a list."""
    chosen = np.asarray(chosen, dtype=bool)
    picked = np.flatnonzero(chosen)
    v = [f"{float(values[k]):g}" for k in picked]
    rising = float(values[-1]) >= float(values[0])
    if picked.size == 0:
        return "nowhere"
    if picked.size == 1:
        return f"{name} {v[0]}"
    if np.all(np.diff(picked) == 1):
        if picked[-1] == chosen.size - 1:
            return f"{name} {'>=' if rising else '<='} {v[0]}"
        if picked[0] == 0:
            return f"{name} {'<=' if rising else '>='} {v[-1]}"
        return f"{name} {v[0]} .. {v[-1]}"
    return f"{name} {', '.join(v)}"


def sign_words(signs, values, name: str, line: str) -> str:
    """How curvature changes along every line (signs (n,) at ``values`` (n,)), e.g.
    ``"falls (more concave) in every column"`` or ``"rises (more convex) at noise >=
    0.016; falls (more concave) at noise <= 0.008; ..."``; a sign held by most lines
    but scattered reads ``"... in every column but batch_size 10"``."""
    signs = np.asarray(signs, dtype=float)
    if np.isnan(signs).all():  # e.g. too few alpha values to read any column
        return f"n/a in every {line}"
    parts = []
    for sign, words in _CHANGE.items():
        chosen = signs == sign
        if chosen.all():
            return f"{words} in every {line}"
        picked = np.flatnonzero(chosen)
        if picked.size > 1 and np.any(np.diff(picked) > 1) and 2 * picked.size > signs.size:
            parts.append(f"{words} in every {line} but {where(~chosen, values, name)}")
        elif picked.size:
            parts.append(f"{words} at {where(chosen, values, name)}")
    if np.isnan(signs).any():
        parts.append(f"n/a at {where(np.isnan(signs), values, name)}")
    return "; ".join(parts)


#: Per direction: the bit of the disagreement codes, the line it runs along, the chain's
#: and the networks' words for "more of it".
_DIRECTIONS = {"nonlinearity": (1, "column", "more friction", "smaller alpha (more nonlinear)",
                                "falls"),
               "noise": (2, "row", "more noise", "noisier {knob}", "rises")}


def disagreement_summary(report: xr.Dataset) -> list[str]:
    """Where the chain's curvature changes the other way from the networks', in words:
    per direction, the lines with opposite signs at the same rank position, then how
    curvature changes along the chain's and the networks' lines."""
    if "disagreement" not in report:  # a report written before these were kept
        return []
    a = report.attrs
    knob = a["knob"]
    lines = [f"where the two disagree (sign of curvature's change along a line: "
             f"{a['sign_rule']}; lines matched at equal rank position):"]
    axes = {"column": ((knob, report[knob].values), ("noise", report["chain_noise"].values)),
            "row": (("alpha", report["alpha"].values), ("friction", report["friction"].values))}
    for along, (bit, line, chain_more, net_more, expected) in _DIRECTIONS.items():
        (net_name, net_values), (chain_name, chain_values) = axes[line]
        across = 0 if line == "column" else 1  # the cells of a column share its flag
        net_off = (report["disagreement"].values & bit).any(axis=across)
        chain_off = (report["spring_disagreement"].values & bit).any(axis=across)
        verdict = (f"opposite in {int(net_off.sum())} of {net_off.size} network {line}s "
                   f"({where(net_off, net_values, net_name)}), {int(chain_off.sum())} of "
                   f"{chain_off.size} chain {line}s ({where(chain_off, chain_values, chain_name)})"
                   if net_off.any() or chain_off.any() else f"no {line} has opposite signs")
        chain_signs = report[f"spring_sign_along_{along}"].values
        net_signs = report[f"network_sign_along_{along}"].values
        lines += [f"  along {along} (per {line}): {verdict}",
                  f"    chain, {chain_more}: curvature "
                  f"{sign_words(chain_signs, chain_values, chain_name, line)}",
                  f"    networks, {net_more.format(knob=knob)}: curvature "
                  f"{sign_words(net_signs, net_values, net_name, line)} (the theory: {expected})"]
    return lines


def dictionary_summary(table: xr.Dataset) -> str:
    """One line on the paper's dictionary read off the effective force F_eff."""
    a = table.attrs
    level = int(round(100 * a["level"]))
    return ("effective force F_eff (the chain's identifiable parameter), Spearman rho with "
            f"its {level}% seed-bootstrap interval: falls with noise (interval below 0) in "
            f"{a['share_rows_falling_with_noise_significant']:.0%} of alpha rows, monotonically "
            f"(rho = -1) in {a['share_rows_falling_with_noise']:.0%}; falls as alpha grows in "
            f"{a['share_cols_falling_with_alpha_significant']:.0%} of columns, monotonically in "
            f"{a['share_cols_falling_with_alpha']:.0%}")
