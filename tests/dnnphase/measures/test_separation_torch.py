"""dnnphase.measures.separation_torch (batched torch measures) against the numpy reference
dnnphase.measures.separation_numpy."""

import numpy as np
import pytest
import torch

from dnnphase import metrics, separation
from phasecore.checks import ConfigError

ALL = metrics.MEASURE_NAMES
TOL = 1e-10


def reference(layers, labels, measures=ALL, rcond=metrics.FUZZINESS_RCOND):
    """The numpy reference, one model and layer at a time: (M, n_measures, L+1)."""
    fns = {**metrics.MEASURES, "fuzziness": lambda h, y: metrics.fuzziness(h, y, rcond=rcond)}
    return np.stack([metrics.load_curve([np.asarray(h) for h in layers], labels, fns[name])
                     for name in measures], axis=1)


def assert_matches(batched, ref, tol=TOL):
    batched = batched.cpu().numpy()
    assert batched.shape == ref.shape
    same_inf = np.isinf(ref) & (batched == ref)
    np.testing.assert_array_equal(np.isnan(batched), np.isnan(ref))
    ok = np.isnan(ref) | same_inf | (np.abs(batched - ref) <= tol * np.maximum(1.0, np.abs(ref)))
    assert ok.all(), f"max |diff| {np.nanmax(np.abs(batched - ref)[~same_inf])}"


def clustered_layers(n_models, n, widths, k, seed, offset=3.0):
    """Features of M models per width: unequal classes, anisotropic clusters, label values 7+5c."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 1.0)) * 0.6 + 0.4 / k
    y = np.concatenate([np.arange(k), rng.choice(k, size=n - k, p=p)])
    rng.shuffle(y)
    layers = []
    for ell, d in enumerate(widths):
        centres = rng.normal(size=(n_models, k, d)) * (0.3 + ell)
        noise = rng.normal(size=(n_models, n, d)) * rng.uniform(0.2, 2.0, size=(n_models, 1, d))
        layers.append(centres[:, y] + noise + offset)
    return layers, 7 + 5 * y


@pytest.mark.parametrize("n_models,n,widths,k", [
    (1, 300, (64, 20, 3), 7),      # d < K-1 in the last layer: Σ_b full rank
    (4, 250, (10, 30, 30, 2), 5),
    (3, 40, (60, 39, 8), 4),       # d >= N - 1: the regression interpolates
    (2, 200, (12, 12), 2),         # two classes
])
def test_matches_reference_on_random_features(n_models, n, widths, k):
    layers, y = clustered_layers(n_models, n, widths, k, seed=n + k)
    out = separation.measure_layers([torch.tensor(h) for h in layers], torch.tensor(y), ALL)
    assert out.dtype == torch.float64 and out.shape == (n_models, len(ALL), len(widths))
    assert_matches(out, reference(layers, y))


def test_matches_reference_on_structured_low_rank_features():
    # rank-2 class structure (< K - 1 = 5) in 40 units, dead units (zero columns),
    # duplicated units, a large common offset, and one layer where two classes coincide.
    rng = np.random.default_rng(3)
    n, k, m = 360, 6, 3
    y = rng.permutation(np.repeat(np.arange(k), [100, 80, 60, 50, 40, 30]))
    embed = rng.normal(size=(m, 2, 40))
    code = rng.normal(size=(m, k, 2))
    h = np.einsum("mkr,mrd->mkd", code, embed)[:, y] + 0.1 * rng.normal(size=(m, n, 40))
    h[:, :, :10] = 0.0
    h[:, :, 10:15] = h[:, :, 15:20]
    merged = h.copy()
    merged[:, y == 1] = merged[:, y == 1] - code[:, None, 1] @ embed + code[:, None, 0] @ embed
    layers = [h + 1e3, np.maximum(h, 0.0), merged]
    out = separation.measure_layers([torch.tensor(a) for a in layers], torch.tensor(y), ALL)
    assert_matches(out, reference(layers, y))


@pytest.fixture(scope="module")
def trained_features():
    """Features of 3 small ReLU / LeakyReLU networks trained a few epochs on digits."""
    from dnnphase.data import load_dataset
    from dnnphase.networks.architecture import Architecture
    from dnnphase.training.train import TrainConfig, train_ensemble

    data = load_dataset("digits", n_train=600, data_seed=0)
    cfg = TrainConfig(epochs=8, lr=3e-3, dtype="float32", device="cpu")
    result = train_ensemble(torch.as_tensor(data.x_train), torch.as_tensor(data.y_train),
                            seeds=[0, 1, 2], alpha=[0.0, 0.0, 0.3], config=cfg,
                            network=Architecture(depth=4, width=48))
    return result.features(), data.y_train


def test_matches_reference_on_trained_network_features(trained_features):
    layers, y = trained_features
    assert layers[0].dtype == torch.float32 and layers[0].shape[2] == 64
    out = separation.measure_layers(layers, torch.as_tensor(y), ALL)
    assert_matches(out, reference([h.double() for h in layers], y))
    # a float32 input is measured exactly as its float64 cast
    assert torch.equal(out, separation.measure_layers([h.double() for h in layers], y, ALL))


def test_rank_cutoff_matches_reference():
    layers, y = clustered_layers(2, 200, (30,), 6, seed=9)
    for rcond in (1e-20, 1e-3, 0.3):
        out = separation.measure_layers([torch.tensor(layers[0])], y, ["fuzziness"], rcond=rcond)
        assert_matches(out, reference(layers, y, ["fuzziness"], rcond=rcond))
    loose = separation.measure_layer(torch.tensor(layers[0]), y, ["fuzziness"], rcond=0.3)
    assert (loose < separation.measure_layer(torch.tensor(layers[0]), y, ["fuzziness"])).all()


def test_non_finite_features_give_nan_for_that_model_and_layer_only():
    layers, y = clustered_layers(4, 120, (9, 9, 5), 3, seed=4)
    clean = separation.measure_layers([torch.tensor(h) for h in layers], y, ALL)
    layers[1][2, 17, 3] = np.nan
    layers[0][0, 5, 0] = np.inf
    layers[2][3] = -np.inf
    out = separation.measure_layers([torch.tensor(h) for h in layers], y, ALL)
    bad = torch.zeros(out.shape, dtype=torch.bool)
    bad[2, :, 1] = bad[0, :, 0] = bad[3, :, 2] = True
    assert out[bad].isnan().all()
    assert torch.equal(out[~bad], clean[~bad])


def test_a_models_value_depends_on_its_features_only(trained_features):
    # Bit for bit: the block size, the other models in the chunk and the thread
    # count must not change a model's load curve (sweeps are chunked freely).
    layers, y = trained_features
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        full = separation.measure_layers(layers, y, ALL)
        torch.set_num_threads(1)
        assert torch.equal(separation.measure_layers(layers, y, ALL, max_block_bytes=1), full)
    finally:
        torch.set_num_threads(threads)
    alone = separation.measure_layers([h[2:3] for h in layers], y, ALL, max_block_bytes=2**40)
    assert torch.equal(alone, full[2:3])


def test_measure_layer_and_default_measures(trained_features):
    layers, y = trained_features
    curves = separation.measure_layers(layers, y)
    assert curves.shape == (3, len(separation.DEFAULT_MEASURES), len(layers))
    one = separation.measure_layer(layers[2], y, ["ncc", "trace_ratio"])
    assert torch.equal(one, curves[:, [3, 0], 2])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_equals_cpu(trained_features):
    layers, y = trained_features
    cpu = separation.measure_layers(layers, y, ALL)
    gpu = separation.measure_layers([h.cuda() for h in layers], torch.as_tensor(y).cuda(), ALL)
    assert gpu.device.type == "cuda"
    assert_matches(gpu, cpu.numpy(), tol=1e-12)


def test_bad_input_raises_config_error():
    layers, y = clustered_layers(2, 50, (4, 4), 3, seed=5)
    t = [torch.tensor(h) for h in layers]
    cases = [
        (lambda: separation.measure_layers(t, y, ["entropy"]), "measures"),
        (lambda: separation.measure_layers(t, y, []), "measures"),
        (lambda: separation.measure_layers([], y), "features"),
        (lambda: separation.measure_layers([t[0], t[1][:1]], y), "features"),
        (lambda: separation.measure_layers([t[0][0]], y), "features"),
        (lambda: separation.measure_layers([t[0].long()], y), "features"),
        (lambda: separation.measure_layers(t, y[:-1]), "labels"),
        (lambda: separation.measure_layers(t, np.zeros(50, dtype=int)), "labels.*2 classes"),
        (lambda: separation.measure_layers(t, y + 0.5), "labels"),
        (lambda: separation.measure_layers(t, y, rcond=-1.0), "rcond"),
        (lambda: separation.measure_layers(t, y, max_block_bytes=0), "max_block_bytes"),
    ]
    for call, match in cases:
        with pytest.raises(ConfigError, match=match):
            call()


def test_fuzziness_on_trained_features_does_not_depend_on_the_cutoff(trained_features):
    # docs/measures.md: on real features Σ_b's spurious K-th direction lies ~1e-32
    # below σ_max and the genuine ones far above 1e-6, so any cut-off in between
    # gives the same value; a cut-off that reaches genuine directions lowers it.
    layers, y = trained_features
    values = [separation.measure_layers(layers, y, ["fuzziness"], rcond=rc)
              for rc in (1e-12, 1e-10, 1e-6)]
    assert torch.equal(values[0], values[1]) and torch.equal(values[1], values[2])
    assert (separation.measure_layers(layers, y, ["fuzziness"], rcond=0.2) < values[1]).all()
