"""Where the fuzziness's pseudo-inverse cut-off acts on trained networks (docs/measures.md).

    python scripts/fuzziness_cutoff.py [--epochs 100]   # ~70 s on one core

Trains the default networks of a sweep (mnist5k, 2 560 digits of 10 x 10; depth 7, width
100, BatchNorm, Adam 1e-3, 100 full-batch epochs, float32, one CPU thread) in one call:
alpha = 1 / dropout 0.3 with seeds 0-10 and, for contrast, the other corners of
alpha {0, 1} x dropout {0, 0.3} with seeds 0-2. For every layer (0 = the input after its
BatchNorm) it takes the eval-mode features and prints

* the spectrum of Sigma_b (rank <= K - 1 = 9): the weakest genuine direction sigma_9 / sigma_1
  (float64, from the SVD of the d x K factor B, as
  ``dnnphase.measures.separation_numpy.fuzziness``);
* log D with the project's float64 cut-off (``FUZZINESS_RCOND`` = 1e-10 sigma_max), with the
  same float64 arithmetic but the cut-off 1.19e-5 sigma_max, and from a float32 computation:
  Sigma_w and Sigma_b formed as d x d float32 matrices and ``numpy.linalg.pinv`` in float32
  with rcond = 100 eps_float32 = 1.19e-5 (``torch.linalg.pinv``'s default tolerance,
  max(m, n) eps, for a 100 x 100 float32 matrix);
* for the layers where that computation drops genuine directions, the change of log D and
  its prediction log(1 - share of Tr(Sigma_w Sigma_b^+) carried by the dropped directions).

``--epochs 30`` repeats it with the shorter training of docs/measures.md's other checks.
Deterministic: fixed seeds, one thread (``dnnphase.training.train.TrainConfig``), one stack layout.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from phasecore.commandline import Parser

#: The float32 computation's relative cut-off: max(m, n) * eps for 100 x 100 float32.
FLOAT32_RCOND = 100 * float(np.finfo(np.float32).eps)  # 1.19e-5
#: (alpha, dropout, seeds): the setting with the weakest directions first.
SETTINGS = ((1.0, 0.3, tuple(range(11))), (1.0, 0.0, (0, 1, 2)), (0.0, 0.3, (0, 1, 2)),
            (0.0, 0.0, (0, 1, 2)))
#: (alpha, dropout, seed) of every model, in training order.
MODELS = [(alpha, dropout, seed) for alpha, dropout, seeds in SETTINGS for seed in seeds]
NAMES = [f"α={alpha:g} p={dropout:g} seed {seed}" for alpha, dropout, seed in MODELS]
K = 10  # classes of mnist5k


def float32_fuzziness(features, labels,
                      rcond: float = FLOAT32_RCOND) -> tuple[float, int, np.ndarray]:
    """log Tr(Sigma_w Sigma_b^+) computed in float32 with d x d covariances and a pinv.

    Returns log D, the number of singular values of Sigma_b kept by the cut-off and all of
    them over the largest. Same definition as ``dnnphase.measures.separation_numpy.fuzziness`` (1/N
    normalisation, class weights n_c / N); NaN where the trace comes out negative.
    """
    x = np.asarray(features, dtype=np.float32)  # (N, d)
    _, index, counts = np.unique(np.asarray(labels), return_inverse=True, return_counts=True)
    index = index.reshape(-1)
    means = np.stack([x[index == k].mean(axis=0) for k in range(len(counts))])  # (K, d)
    r = x - means[index]  # (N, d)
    sigma_w = r.T @ r / np.float32(x.shape[0])  # (d, d)
    b = (means - x.mean(axis=0)).T * np.sqrt(counts / counts.sum()).astype(np.float32)
    sigma_b = b @ b.T  # (d, d)
    s = np.linalg.svd(sigma_b, compute_uv=False)  # float32 LAPACK
    with np.errstate(invalid="ignore"):
        value = np.log(np.sum(sigma_w * np.linalg.pinv(sigma_b, rcond=rcond).T))
    return float(value), int(np.sum(s > rcond * s[0])), s / s[0]


def between_spectrum(features, labels) -> tuple[np.ndarray, np.ndarray]:
    """Float64 eigenvalues sigma_j of Sigma_b (descending, from the SVD of B) and the terms
    u_j^T Sigma_w u_j / sigma_j whose sum over the kept j is Tr(Sigma_w Sigma_b^+)."""
    from dnnphase import metrics

    x = np.asarray(features, dtype=np.float64)
    stats = metrics.class_statistics(x, labels)
    b = (stats.means - stats.global_mean).T * np.sqrt(stats.counts / stats.counts.sum())
    u, s, _ = np.linalg.svd(b, full_matrices=False)  # (d, K), (K,)
    proj = (x - stats.means[stats.index]) @ u  # (N, K)
    sigma = s * s
    return sigma, np.einsum("nj,nj->j", proj, proj) / x.shape[0] / sigma


def train(epochs: int):
    """Features [h_0..h_L] (each (M, N, d) float32) of the MODELS and their labels."""
    import torch

    from dnnphase.sweeps.sweep import SweepConfig, load_data
    from dnnphase.training.train import train_ensemble

    cfg = SweepConfig(epochs=epochs)
    data = load_data(cfg)
    result = train_ensemble(torch.as_tensor(data.x_train), torch.as_tensor(data.y_train),
                            seeds=[m[2] for m in MODELS], alpha=[m[0] for m in MODELS],
                            dropout=[m[1] for m in MODELS], config=cfg.train_config(),
                            network=cfg.architecture())
    assert not result.diverged.any()
    return result.features(), data.y_train


def measure(features, labels) -> dict[str, np.ndarray]:
    """Per model and layer: spectrum ratios and the log D of every computation."""
    from dnnphase import metrics, separation

    n_models, n_layers = features[0].shape[0], len(features)
    out = {key: np.zeros((n_models, n_layers)) for key in (
        "weakest", "next", "spurious", "floor32", "d64", "d64_cut", "d32", "d32_tiny", "predicted")}
    out["kept32"] = np.zeros((n_models, n_layers), dtype=int)
    out["sweep"] = separation.measure_layers(features, labels, ["fuzziness"])[:, 0].numpy()
    for m in range(n_models):
        for layer, h in enumerate(features):
            x = h[m].double().numpy()
            sigma, terms = between_spectrum(x, labels)
            keep64 = sigma > metrics.FUZZINESS_RCOND * sigma[0]
            keep32 = sigma > FLOAT32_RCOND * sigma[0]
            out["weakest"][m, layer] = sigma[K - 2] / sigma[0]
            out["next"][m, layer] = sigma[K - 3] / sigma[0]
            out["spurious"][m, layer] = sigma[K - 1] / sigma[0]
            out["d64"][m, layer] = metrics.fuzziness(x, labels)
            assert abs(out["d64"][m, layer] - np.log(terms[keep64].sum())) < 1e-9
            out["d64_cut"][m, layer] = metrics.fuzziness(x, labels, rcond=FLOAT32_RCOND)
            out["predicted"][m, layer] = np.log(terms[keep32].sum() / terms[keep64].sum())
            d32, out["kept32"][m, layer], s32 = float32_fuzziness(h[m], labels)
            out["d32"][m, layer], out["floor32"][m, layer] = d32, s32[K - 1]
            out["d32_tiny"][m, layer] = float32_fuzziness(h[m], labels, rcond=1e-10)[0]
    return out


def print_tables(r: dict[str, np.ndarray]) -> None:
    from dnnphase.measures.separation_numpy import FUZZINESS_RCOND

    n_layers = r["d64"].shape[1]
    print(f"σ_9/σ_1 of Σ_b per layer (* below the float32 cut-off {FLOAT32_RCOND:.3g})\n")
    print("| model | " + " | ".join(f"{layer}" for layer in range(n_layers)) + " |")
    print("|---|" + "---|" * n_layers)
    for name, row in zip(NAMES, r["weakest"], strict=True):
        cells = [f"{v:.1e}" + ("*" if v <= FLOAT32_RCOND else "") for v in row]
        print(f"| {name} | " + " | ".join(cells) + " |")

    print("\nσ_9/σ_1, smallest over the seeds of each setting\n")
    print("| setting | " + " | ".join(f"{layer}" for layer in range(n_layers)) + " |")
    print("|---|" + "---|" * n_layers)
    for alpha, dropout, seeds in SETTINGS:
        rows = [i for i, (a, p, _) in enumerate(MODELS) if (a, p) == (alpha, dropout)]
        cells = [f"{v:.1e}" for v in r["weakest"][rows].min(axis=0)]
        print(f"| α={alpha:g} p={dropout:g}, {len(seeds)} seeds | " + " | ".join(cells) + " |")

    print("\nlog D where the float32 computation (cut-off 1.19e-5) drops genuine directions\n")
    print("| model | layer | σ_8/σ_1 | σ_9/σ_1 | kept (f32) | log D f64, 1e-10 | "
          "f64, 1.19e-5 | f32, 1.19e-5 | change | predicted |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m, layer in zip(*np.nonzero(r["kept32"] < K - 1), strict=True):
        print(f"| {NAMES[m]} | {layer} | {r['next'][m, layer]:.1e} | "
              f"{r['weakest'][m, layer]:.1e} | {r['kept32'][m, layer]} of {K - 1} | "
              f"{r['d64'][m, layer]:.4f} | {r['d64_cut'][m, layer]:.4f} | "
              f"{r['d32'][m, layer]:.4f} | {r['d32'][m, layer] - r['d64'][m, layer]:+.3f} | "
              f"{r['predicted'][m, layer]:+.3f} |")

    kept = r["kept32"] == K - 1
    weakest = r["weakest"].min()
    tiny = r["d32_tiny"]
    margin = weakest / FUZZINESS_RCOND
    print(f"\nweakest genuine direction: {weakest:.2g} σ_max, {margin:.2g}× above the project's "
          f"cut-off {FUZZINESS_RCOND:g}; spurious (10th) direction, float64 SVD of B: "
          f"{r['spurious'].min():.1g} … {r['spurious'].max():.1g} σ_max")
    print(f"models × layers with a direction dropped at 1.19e-5: {(~kept).sum()} of {kept.size}; "
          f"float32 vs float64 log D where none is dropped: max |Δ| "
          f"{np.abs(r['d32'] - r['d64'])[kept].max():.1g}")
    print(f"float32 with the cut-off 1e-10 (keeps its round-off directions): log D "
          f"{np.nanmin(tiny):.1f} … {np.nanmax(tiny):.1f}, NaN in {np.isnan(tiny).sum()} of "
          f"{tiny.size}")
    print(f"float32 Σ_b's round-off (its 10th singular value): {r['floor32'].min():.1g} … "
          f"{r['floor32'].max():.1g} σ_max")
    print(f"sweep (dnnphase.measures.separation_torch) vs reference: max |Δ log D| "
          f"{np.abs(r['sweep'] - r['d64']).max():.1g}")


def main(argv=None) -> int:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=100, help="full-batch epochs")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error(f"--epochs must be an integer >= 1 (got {args.epochs})")
    start = time.perf_counter()
    features, labels = train(args.epochs)
    trained = time.perf_counter()
    results = measure(features, labels)
    print_tables(results)
    print(f"\n{len(MODELS)} models, {args.epochs} epochs; trained in {trained - start:.0f} s, "
          f"measured in {time.perf_counter() - trained:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
