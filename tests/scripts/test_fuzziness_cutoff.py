"""The fuzziness's rank cut-off keeps weak genuine between-class directions (docs/measures.md).

Planted features with an exactly known spectrum: Σ_b = U diag(1, 0.3, σ_w) Uᵀ (K = 4 classes,
d = 6, so Σ_b also has 3 null directions) and a within-class variance of (0.5, 0.2, 1.5 σ_w)
along U's columns, so Tr(Σ_w Σ_b⁺) = 0.5 + 0.2/0.3 + 1.5 = 8/3 for any weak σ_w > 0, and
dropping the weak direction leaves 0.5 + 0.2/0.3 = 7/6: log D falls by log(16/7) = 0.83 —
the size of the error measured on trained networks where a float32 computation with the
cut-off 1.19e-5 σ_max drops their weakest direction.
"""

import runpy
from pathlib import Path

import numpy as np
import pytest
import torch

from dnnphase import metrics, separation

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fuzziness_cutoff.py"
FLOAT32_RCOND = 100 * float(np.finfo(np.float32).eps)  # 1.19e-5: max(m, n) eps, 100 x 100
FULL, WITHOUT_WEAK = np.log(8 / 3), np.log(7 / 6)


def planted(weak: float, k: int = 4, d: int = 6, seed: int = 0):
    """(N, d) features and labels: K balanced classes, 2d samples each, with Σ_b's nonzero
    eigenvalues (1, 0.3, weak) along U = q[:, :3] and Σ_w = Σ_i v_i q_i q_iᵀ exactly."""
    rng = np.random.default_rng(seed)
    q = np.linalg.qr(rng.normal(size=(d, d)))[0]  # orthonormal columns q_i
    sigma = np.array([1.0, 0.3, weak])
    # contrasts: K x (K-1) orthonormal columns orthogonal to (1, ..., 1), so Σ_c μ_c = 0 and
    # Σ_b = (1/K) Σ_c μ_c μ_cᵀ = U diag(sigma) Uᵀ
    c = np.linalg.qr(np.c_[np.ones(k), rng.normal(size=(k, k - 1))])[0][:, 1:]
    means = np.sqrt(k) * (c * np.sqrt(sigma)) @ q[:, : k - 1].T  # (K, d)
    v = np.array([0.5, 0.2, 1.5 * weak, 0.7, 0.9, 1.1])  # within-class variance along q_i
    # each class: ±sqrt(d v_i) q_i for i = 1..d, mean zero, covariance Σ_i v_i q_i q_iᵀ
    spread = np.sqrt(d * v)[:, None] * q.T  # (d, d): row i is sqrt(d v_i) q_i
    residuals = np.concatenate([spread, -spread])  # (2d, d)
    x = (means[:, None, :] + residuals[None]).reshape(-1, d) + 3.0  # common offset
    y = np.repeat(np.arange(k), 2 * d)
    return x, y


def lstsq_fuzziness(x, y, rcond: float) -> float:
    """Independent float64 reference: explicit d x d covariances, Tr(Σ_b⁺ Σ_w) from the
    minimum-norm least-squares solution of Σ_b X = Σ_w (LAPACK gelsd)."""
    sigma_w, sigma_b = metrics.within_between_covariance(x, y)
    solution = np.linalg.lstsq(sigma_b, sigma_w, rcond=rcond)[0]
    return float(np.log(np.trace(solution)))


@pytest.mark.parametrize("weak", [1e-7, 1e-9])
def test_the_project_cutoff_keeps_a_weak_genuine_direction(weak):
    x, y = planted(weak)
    value = metrics.fuzziness(x, y)
    assert value == pytest.approx(FULL, abs=1e-8), (
        f"the weak direction at {weak:g} σ_max was dropped (FUZZINESS_RCOND = "
        f"{metrics.FUZZINESS_RCOND:g})" if
        value == pytest.approx(WITHOUT_WEAK, abs=1e-6) else "wrong value")
    assert lstsq_fuzziness(x, y, rcond=1e-13) == pytest.approx(FULL, abs=1e-6)
    batched = separation.measure_layers([torch.as_tensor(x)[None]], y, ["fuzziness"])
    assert float(batched[0, 0, 0]) == pytest.approx(FULL, abs=1e-8)


def test_the_project_cutoff_drops_null_directions():
    # weak = 0: Σ_b has rank 2; its null directions come out at round-off and must go
    x, y = planted(0.0)
    assert metrics.fuzziness(x, y) == pytest.approx(WITHOUT_WEAK, abs=1e-10)


def test_the_float32_cutoff_drops_it_and_log_d_falls_by_the_dropped_share():
    x, y = planted(1e-7)
    full, cut = metrics.fuzziness(x, y), metrics.fuzziness(x, y, rcond=FLOAT32_RCOND)
    assert cut == pytest.approx(WITHOUT_WEAK, abs=1e-8)
    # predicted: log(1 - share of the weak term 1.5 in 8/3) = log(7/16) = -0.827
    assert cut - full == pytest.approx(np.log(7 / 16), abs=1e-8)
    assert lstsq_fuzziness(x, y, rcond=FLOAT32_RCOND) == pytest.approx(cut, abs=1e-8)


def test_the_docs_float32_emulation_drops_it_too():
    float32_fuzziness = runpy.run_path(str(SCRIPT), run_name="cutoff")["float32_fuzziness"]
    x, y = planted(1e-7)
    value, kept, spectrum = float32_fuzziness(x, y)
    assert kept == 2 and spectrum.dtype == np.float32
    assert value == pytest.approx(WITHOUT_WEAK, abs=1e-4)
    x, y = planted(1e-3)  # above the cut-off: kept, and float32 resolves it
    value, kept, _ = float32_fuzziness(x, y)
    assert kept == 3 and value == pytest.approx(FULL, abs=1e-3)
