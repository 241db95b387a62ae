"""Tests of dnnphase.measures.separation_numpy against straightforward numpy computations."""

import re

import numpy as np
import pytest
import torch

import phasecore.loadcurve as slc
from dnnphase.measures import separation_numpy as m

# (N, d, K): d < K, d > N, d between, two classes, full-rank Σ_b (d <= K - 1)
SHAPES = [(200, 3, 6), (30, 50, 4), (300, 20, 10), (100, 7, 2), (150, 5, 8)]


def make_data(n, d, k, seed, label_values=None, spread=1.0):
    """Unbalanced labelled Gaussian clusters with anisotropic noise, every class present."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.7))
    p = 0.5 * p + 0.5 / k
    y = np.concatenate([np.arange(k), rng.choice(k, size=n - k, p=p)])
    rng.shuffle(y)
    centres = spread * rng.normal(size=(k, d)) + 5.0
    x = centres[y] + rng.normal(size=(n, d)) * rng.uniform(0.3, 2.0, size=d)
    if label_values is not None:
        y = np.asarray(label_values)[y]
    return x, y


# ---- independent reference implementations (explicit loops, full d×d) ----


def ref_cov(x, y):
    n, d = x.shape
    mu = x.mean(axis=0)
    sw, sb = np.zeros((d, d)), np.zeros((d, d))
    for c in np.unique(y):
        xc = x[y == c]
        nc = len(xc)
        sw += nc / n * np.atleast_2d(np.cov(xc.T, bias=True)) if nc > 1 else 0.0
        diff = xc.mean(axis=0) - mu
        sb += nc / n * np.outer(diff, diff)
    return sw, sb


def ref_cdnv(x, y):
    classes = np.unique(y)
    mus = [x[y == c].mean(axis=0) for c in classes]
    var = [
        np.mean(np.sum((x[y == c] - mu) ** 2, axis=1)) for c, mu in zip(classes, mus, strict=True)
    ]
    vals = []
    for i in range(len(classes)):
        for j in range(i + 1, len(classes)):
            vals.append((var[i] + var[j]) / (2 * np.sum((mus[i] - mus[j]) ** 2)))
    return np.mean(vals)


def ref_ncc(x, y):
    classes = np.unique(y)
    mus = np.array([x[y == c].mean(axis=0) for c in classes])
    correct = 0
    for xi, yi in zip(x, y, strict=True):
        dist = [np.linalg.norm(xi - mu) for mu in mus]
        correct += classes[int(np.argmin(dist))] == yi
    return correct / len(x)


def ref_regression(x, t):
    a = np.hstack([x, np.ones((len(x), 1))])
    coef, *_ = np.linalg.lstsq(a, t, rcond=None)
    resid = t - a @ coef
    return np.sqrt(np.sum(resid**2) / len(x))


# ---- equality with the references ----


@pytest.mark.parametrize("n,d,k", SHAPES)
def test_metrics_match_reference(n, d, k):
    x, y = make_data(n, d, k, seed=n + d + k, label_values=np.arange(k) * 3 + 7)
    sw_ref, sb_ref = ref_cov(x, y)
    sw, sb = m.within_between_covariance(x, y)
    np.testing.assert_allclose(sw, sw_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sb, sb_ref, rtol=1e-10, atol=1e-12)
    # Σ_w + Σ_b is the biased total covariance
    np.testing.assert_allclose(sw + sb, np.atleast_2d(np.cov(x.T, bias=True)), atol=1e-10)

    assert m.trace_ratio(x, y) == pytest.approx(
        np.log(np.trace(sw_ref) / np.trace(sb_ref)), rel=1e-12
    )
    fz_ref = np.log(np.trace(sw_ref @ np.linalg.pinv(sb_ref, rcond=m.FUZZINESS_RCOND)))
    assert m.fuzziness(x, y) == pytest.approx(fz_ref, rel=1e-8, abs=1e-10)
    assert m.cdnv(x, y) == pytest.approx(ref_cdnv(x, y), rel=1e-12)
    assert m.ncc_accuracy(x, y) == pytest.approx(ref_ncc(x, y), abs=1e-15)
    onehot = (y[:, None] == np.unique(y)[None, :]).astype(float)
    assert m.regression_load(x, onehot) == pytest.approx(
        ref_regression(x, onehot), rel=1e-8, abs=1e-10
    )
    assert m.regression_load_onehot(x, y) == pytest.approx(m.regression_load(x, onehot))


def test_class_statistics():
    x, y = make_data(60, 4, 3, seed=1, label_values=[10, -2, 5])
    stats = m.class_statistics(x, y)
    np.testing.assert_array_equal(stats.classes, [-2, 5, 10])
    for k, c in enumerate(stats.classes):
        np.testing.assert_allclose(stats.means[k], x[y == c].mean(axis=0), rtol=1e-13)
        assert stats.counts[k] == np.sum(y == c)
    np.testing.assert_allclose(stats.global_mean, x.mean(axis=0), rtol=1e-13)
    np.testing.assert_array_equal(stats.classes[stats.index], y)


def test_fuzziness_rank_cutoff():
    # d = 40 > K - 1 = 4: Σ_b has rank 4 exactly; the cut-off must drop the
    # spurious fifth direction, and a large rcond drops genuine ones too.
    x, y = make_data(120, 40, 5, seed=3)
    sw, sb = ref_cov(x, y)
    for rcond in (m.FUZZINESS_RCOND, 1e-3, 0.5):
        expected = np.log(np.trace(sw @ np.linalg.pinv(sb, rcond=rcond)))
        assert m.fuzziness(x, y, rcond=rcond) == pytest.approx(expected, rel=1e-8)
    assert m.fuzziness(x, y, rcond=0.5) < m.fuzziness(x, y)


# ---- invariances ----


def random_orthogonal(d, rng):
    q, r = np.linalg.qr(rng.normal(size=(d, d)))
    return q * np.sign(np.diag(r))


def test_trace_ratio_invariances():
    rng = np.random.default_rng(4)
    x, y = make_data(150, 12, 5, seed=4)
    base = m.trace_ratio(x, y)
    q = random_orthogonal(12, rng)
    for xt in (3.7 * x, 1e-6 * x, x @ q.T, x @ q.T * 250.0 - 40.0):
        assert m.trace_ratio(xt, y) == pytest.approx(base, rel=1e-10, abs=1e-12)
    # a non-orthogonal map does change it (the measure is not affine-invariant)
    assert abs(m.trace_ratio(x * np.linspace(0.1, 10, 12), y) - base) > 1e-3


def test_fuzziness_invariant_to_invertible_maps_when_sigma_b_full_rank():
    # d = 5 <= K - 1 = 5: Σ_b invertible, Tr(Σ_w Σ_b^-1) is invariant under any A.
    rng = np.random.default_rng(5)
    x, y = make_data(600, 5, 6, seed=5)
    a = random_orthogonal(5, rng) @ np.diag(np.linspace(0.5, 2.0, 5)) @ random_orthogonal(5, rng)
    base = m.fuzziness(x, y)
    assert m.fuzziness(x @ a.T + 3.0, y) == pytest.approx(base, rel=1e-9)


def test_fuzziness_rank_deficient_invariant_to_rotation_and_scale():
    # d = 5 > K - 1 = 3: the pseudo-inverse only commutes with similarity maps.
    rng = np.random.default_rng(6)
    x, y = make_data(400, 5, 4, seed=6)
    base = m.fuzziness(x, y)
    q = random_orthogonal(5, rng)
    assert m.fuzziness(0.02 * x @ q.T - 1.0, y) == pytest.approx(base, rel=1e-9)


def test_cdnv_and_ncc_invariant_to_similarity():
    rng = np.random.default_rng(7)
    x, y = make_data(200, 6, 4, seed=7)
    xt = 5.0 * x @ random_orthogonal(6, rng).T + 2.0
    assert m.cdnv(xt, y) == pytest.approx(m.cdnv(x, y), rel=1e-10)
    assert m.ncc_accuracy(xt, y) == m.ncc_accuracy(x, y)


# ---- NCC, effective depth, regression ----


def test_ncc_separated_clusters_and_noise():
    rng = np.random.default_rng(8)
    y = rng.integers(0, 4, size=400)
    separated = 100.0 * np.eye(4)[y] + rng.normal(size=(400, 4))
    assert m.ncc_accuracy(separated, y) == 1.0
    noise = rng.normal(size=(4000, 2))
    y_noise = rng.integers(0, 4, size=4000)
    assert abs(m.ncc_accuracy(noise, y_noise) - 0.25) < 0.05


def test_ncc_with_given_means():
    x, y = make_data(300, 6, 3, seed=9, spread=3.0)
    stats = m.class_statistics(x, y)
    assert m.ncc_accuracy(x, y, means=stats.means) == m.ncc_accuracy(x, y)
    # train means applied to other data, with label values given explicitly
    x2, y2 = make_data(50, 6, 3, seed=10, spread=3.0)
    acc = m.ncc_accuracy(x2, y2 + 100, means=stats.means, classes=stats.classes + 100)
    assert acc == m.ncc_accuracy(x2, y2, means=stats.means)
    # test set may lack a class
    keep = y2 != 2
    assert 0.0 <= m.ncc_accuracy(x2[keep], y2[keep], means=stats.means) <= 1.0


def test_effective_depth():
    acc = np.array(
        [
            [0.50, 0.90, 0.995, 1.0, 1.0],
            [0.20, 0.30, 0.40, 0.50, 0.60],
            [1.00, 1.00, 1.00, 1.0, 1.0],
            [0.10, np.nan, 0.99, 0.2, 1.0],
        ]
    )
    np.testing.assert_array_equal(m.effective_depth(acc), [2.0, np.nan, 0.0, 2.0])
    np.testing.assert_array_equal(m.effective_depth(acc, threshold=0.55), [1.0, 4.0, 0.0, 2.0])
    assert m.effective_depth(acc[0]) == 2.0
    assert np.isnan(m.effective_depth(np.full(4, np.nan)))
    assert m.effective_depth(np.stack([acc, acc[::-1]])).shape == (2, 4)


def test_regression_load():
    rng = np.random.default_rng(11)
    x = rng.normal(size=(80, 6))
    t = x @ rng.normal(size=(6, 3)) + rng.normal(size=3)
    assert m.regression_load(x, t) < 1e-10
    assert m.regression_load(x, t[:, 0]) < 1e-10
    noisy = t + 0.1 * rng.normal(size=t.shape)
    assert m.regression_load(x, noisy) == pytest.approx(ref_regression(x, noisy), rel=1e-10)
    # more features than samples: interpolation, zero load
    assert m.regression_load(rng.normal(size=(20, 40)), rng.normal(size=20)) < 1e-10


def test_non_finite_features_give_nan():
    x, y = make_data(40, 3, 2, seed=12)
    x[3, 1] = np.nan
    for name, fn in m.MEASURES.items():
        assert np.isnan(fn(x, y)), name


# ---- torch input, load curves ----


def test_torch_input_equals_numpy():
    x, y = make_data(120, 8, 4, seed=13)
    xt = torch.tensor(x, dtype=torch.float32)
    x32 = xt.numpy()
    yt = torch.tensor(y)
    for name, fn in m.MEASURES.items():
        assert fn(xt, yt) == fn(x32, y), name
    sw_t, sb_t = m.within_between_covariance(xt, yt)
    sw_n, sb_n = m.within_between_covariance(x32, y)
    assert sw_t.dtype == np.float64
    np.testing.assert_array_equal(sw_t, sw_n)
    np.testing.assert_array_equal(sb_t, sb_n)
    assert m.effective_depth(torch.tensor([0.5, 1.0])) == 1.0


def test_load_curve_forms():
    rng = np.random.default_rng(14)
    n, d, n_layers, n_models = 60, 5, 4, 3
    y = rng.integers(0, 3, size=n)
    stack = rng.normal(size=(n_layers, n_models, n, d)) + np.eye(3, d)[y] * np.arange(
        1, n_layers + 1
    ).reshape(-1, 1, 1, 1)
    for measure in m.MEASURES:
        fn = m.MEASURES[measure]
        single = m.load_curve([h for h in stack[:, 0]], y, measure=measure)
        np.testing.assert_array_equal(single, [fn(h, y) for h in stack[:, 0]])
        np.testing.assert_array_equal(m.load_curve(stack[:, 0], y, measure), single)
        np.testing.assert_array_equal(
            m.load_curve(torch.tensor(stack[:, 0]), torch.tensor(y), measure), single
        )
        batched = m.load_curve([torch.tensor(h) for h in stack], y, measure)
        assert batched.shape == (n_models, n_layers)
        np.testing.assert_array_equal(batched[0], single)
        np.testing.assert_array_equal(m.load_curve(stack, y, measure), batched)
    # per-model labels (M, N)
    labels = np.stack([y, rng.integers(0, 3, size=n), y])
    per_model = m.load_curve(list(stack), labels)
    for i in range(n_models):
        np.testing.assert_array_equal(per_model[i], m.load_curve(stack[:, i], labels[i]))
    # layers of different widths, and a callable measure
    widths = [rng.normal(size=(n, w)) for w in (8, 5, 2)]
    curve = m.load_curve(widths, y, measure=lambda h, lab: h.shape[1])
    np.testing.assert_array_equal(curve, [8, 5, 2])


def test_reexports_are_shared_implementation():
    assert m.curvature is slc.curvature
    assert m.curvature_scaled is slc.curvature_scaled
    assert m.linearity is slc.linearity
    assert m.phase_label is slc.phase_label
    curve = m.load_curve([np.eye(6)[:, :k] for k in (6, 4, 3, 2)], np.arange(6) % 2, "ncc")
    assert np.isfinite(m.curvature(curve))


# ---- bad input ----


@pytest.mark.parametrize("fn", list(m.MEASURES.values()) + [m.class_statistics])
def test_bad_input_raises(fn):
    x, y = make_data(30, 3, 3, seed=15)
    with pytest.raises(ValueError, match="labels.*at least 2 classes"):
        fn(x, np.zeros(30, dtype=int))
    with pytest.raises(ValueError, match="labels.*N = 30"):
        fn(x, y[:-1])
    with pytest.raises(ValueError, match="labels.*1-D"):
        fn(x, y[:, None])
    with pytest.raises(ValueError, match="features.*2-D"):
        fn(x[None], y)
    with pytest.raises(ValueError, match="features.*2-D"):
        fn(x[:, 0], y)


def test_bad_parameters_raise():
    x, y = make_data(30, 3, 3, seed=16)
    with pytest.raises(ValueError, match="measure.*trace_ratio.*fuzziness"):
        m.load_curve([x, x], y, measure="entropy")
    with pytest.raises(ValueError, match="features_per_layer"):
        m.load_curve([], y)
    with pytest.raises(ValueError, match="features_per_layer.*ndim"):
        m.load_curve([x, x[None]], y)
    with pytest.raises(ValueError, match="features_per_layer.*models"):
        m.load_curve([np.stack([x, x]), np.stack([x, x, x])], y)
    with pytest.raises(ValueError, match="labels.*M = 2"):
        m.load_curve([np.stack([x, x])], np.stack([y, y, y]))
    with pytest.raises(ValueError, match="threshold"):
        m.effective_depth([0.5, 1.0], threshold=1.5)
    with pytest.raises(ValueError, match="ncc_acc_per_layer"):
        m.effective_depth(0.5)
    with pytest.raises(ValueError, match="rcond"):
        m.fuzziness(x, y, rcond=-1.0)
    with pytest.raises(ValueError, match="means.*d = 2"):
        m.ncc_accuracy(x, y, means=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="classes"):
        m.ncc_accuracy(x, y, means=np.zeros((3, 3)), classes=[0, 1])
    with pytest.raises(ValueError, match="targets"):
        m.regression_load(x, np.zeros(29))


# ---- statistics once, pure measures on top ----


def test_layer_measures_share_statistics_and_equal_the_public_measures():
    x, y = make_data(150, 9, 4, seed=17, label_values=[3, 1, 4, 15])
    values = m.layer_measures(x, y)
    assert list(values) == list(m.MEASURES)
    for name, fn in m.MEASURES.items():
        assert values[name] == fn(x, y), name
    stats = m.class_statistics(x, y)
    assert m.MEASURES_OF["fuzziness"](x, stats, rcond=0.5) == m.fuzziness(x, y, rcond=0.5)
    assert m.layer_measures(x, y, "cdnv") == {"cdnv": m.cdnv(x, y)}
    x[0, 0] = np.inf
    assert all(np.isnan(v) for v in m.layer_measures(x, y, ["ncc", "trace_ratio"]).values())
    with pytest.raises(ValueError, match="measures.*entropy"):
        m.layer_measures(x, y, ["trace_ratio", "entropy"])


def test_measure_names_are_checked_in_one_place():
    """The reference, the batched measures and a sweep refuse an unknown measure with the
    one message of ``check_measures``, which lists every measure of ``MEASURES``."""
    from dnnphase import separation
    from dnnphase.sweeps.sweep import SweepConfig
    from phasecore.checks import ConfigError

    x, y = make_data(30, 3, 3, seed=18)
    several = "measures must be one or more of " + ", ".join(m.MEASURES)
    calls = [lambda: m.layer_measures(x, y, ["trace_ratio", "entropy"]),
             lambda: separation.measure_layers([torch.tensor(x)[None]], y, ["trace_ratio",
                                                                            "entropy"]),
             lambda: SweepConfig(measures=["trace_ratio", "entropy"])]
    for call in calls:
        with pytest.raises(ConfigError, match=re.escape(several)):
            call()
    with pytest.raises(ConfigError, match=re.escape("measure must be one of trace_ratio, ")):
        m.load_curve([x, x], y, measure="entropy")
