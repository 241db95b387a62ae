"""He & Su's equi-separation statistics, Galanti et al.'s effective depth and their test NCC
with training centres, against independent formulas on hand-made curves and features."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from dnnphase.measures import laws
from dnnphase.measures.load_curve import measure_model
from dnnphase.measures.separation_numpy import fuzziness, ncc_accuracy
from phasecore.checks import ConfigError


def _pearson_and_slope(y):
    """Independent of phasecore.loadcurve: numpy's correlation and degree-1 fit."""
    layer = np.arange(len(y), dtype=float)
    return np.corrcoef(layer, y)[0, 1], np.polyfit(layer, y, 1)[0]


def test_a_geometric_decay_gives_r_minus_one_its_ratio_and_the_papers_half_life():
    rho, d0 = 0.818, 7.0  # He & Su's 20-layer Adam network: half-life 3.45 layers
    curve = np.log(d0 * rho ** np.arange(21))  # log D_l, as the fuzziness is stored
    stats = laws.equi_separation(curve)
    assert stats["pearson_r"] == pytest.approx(-1.0, abs=1e-12)
    assert stats["decay_ratio"] == pytest.approx(rho, rel=1e-12)
    assert stats["half_life"] == pytest.approx(math.log(2) / math.log(1 / rho), rel=1e-12)
    assert round(float(stats["half_life"]), 2) == 3.45


def test_the_statistics_match_numpys_correlation_and_fit_on_bent_curves():
    rng = np.random.default_rng(3)
    curves = np.cumsum(-rng.uniform(0.1, 1.0, size=(4, 3, 9)), axis=-1) + 5.0  # (4, 3, L+1)
    stats = laws.equi_separation(curves)
    assert stats["pearson_r"].shape == (4, 3)
    for idx in np.ndindex(4, 3):
        r, slope = _pearson_and_slope(curves[idx])
        assert stats["pearson_r"][idx] == pytest.approx(r, abs=1e-12)
        assert stats["decay_ratio"][idx] == pytest.approx(math.exp(slope), rel=1e-12)
        assert stats["half_life"][idx] == pytest.approx(math.log(2) / -slope, rel=1e-10)


def test_the_stored_log_is_not_taken_twice():
    """The fuzziness measure returns log Tr(Σ_w Σ_b⁺): its ratio per layer is Tr's."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 40)
    centres = rng.normal(size=(3, 5)) * 3
    spreads = [1.0, 0.5, 0.25, 0.125]  # the within-class spread halves: Tr(...) / 4 a layer
    noise = rng.normal(size=(120, 5))
    noise -= np.stack([noise[y == c].mean(0) for c in range(3)])[y]  # class means stay put
    curve = [fuzziness(centres[y] + s * noise, y) for s in spreads]
    stats = laws.equi_separation(curve)
    assert stats["decay_ratio"] == pytest.approx(0.25, rel=1e-10)
    assert stats["half_life"] == pytest.approx(0.5, rel=1e-10)
    assert stats["pearson_r"] == pytest.approx(-1.0, abs=1e-12)


def test_rising_short_and_non_finite_curves():
    stats = laws.equi_separation([[0.0, 1.0, 2.0], [0.0, np.inf, 1.0], [1.0, np.nan, 0.0]])
    assert stats["pearson_r"][0] == pytest.approx(1.0)
    assert stats["half_life"][0] == np.inf  # it never halves
    assert np.isnan([stats[k][1:] for k in laws.EQUI_SEPARATION]).all()
    short = laws.equi_separation([[1.0, 0.0]])  # a correlation of two points says nothing
    assert all(np.isnan(v).all() and v.shape == (1,) for v in short.values())


def test_effective_depth_is_the_first_hidden_layer_reaching_the_threshold():
    acc = np.array([
        [0.30, 0.80, 0.995, 1.0, 1.0],  # layer 2
        [0.999, 0.50, 0.90, 0.99, 1.0],  # the input is not a candidate: layer 3 (0.99 reaches)
        [0.2, 0.5, 0.9, 0.95, 0.98],  # none
        [0.2, np.nan, 1.0, 1.0, 1.0],  # a NaN layer before it: unknown
        [0.2, 0.995, np.nan, 1.0, 1.0],  # a NaN after the first one that reaches it: fine
    ])
    expected = []
    for row in acc:  # the definition, written out
        hidden = [(i, a) for i, a in enumerate(row) if i >= 1]
        hit = next((i for i, a in hidden if a >= 0.99), None)
        seen_nan = hit is not None and any(np.isnan(a) for i, a in hidden if i < hit)
        expected.append(np.nan if hit is None or seen_nan else hit)
    np.testing.assert_array_equal(laws.effective_depth(acc), expected)
    assert np.array_equal(laws.effective_depth(acc[:, 1:], first=0), [1, 2, np.nan, np.nan, 0],
                          equal_nan=True)
    assert laws.effective_depth(acc, threshold=0.999)[0] == 3
    assert np.isnan(laws.effective_depth([[1.0]]))[0]  # the input alone: no hidden layer
    with pytest.raises(ConfigError, match="first"):
        laws.effective_depth(acc, first=2)


def _layers(rng, m, n, y, shift=0.0):
    return [torch.tensor(rng.normal(size=(m, n, 4)) + (1.0 + k) * y[None, :, None] + shift)
            for k in range(3)]


def test_ncc_with_training_centres_matches_the_reference_and_per_model_labels():
    rng = np.random.default_rng(1)
    y_train, y_test = np.arange(90) % 3, rng.integers(0, 3, 50)
    train, test = _layers(rng, 2, 90, y_train), _layers(rng, 2, 50, y_test, shift=0.4)
    labels = np.stack([y_train, rng.permutation(y_train)])  # model 1: its own labels
    got = laws.ncc_to_centres(test, torch.tensor(y_test),
                              laws.class_centres(train, torch.tensor(labels)))
    for j in range(2):
        for layer in range(3):
            h = train[layer][j].numpy()
            means = np.stack([h[labels[j] == k].mean(0) for k in range(3)])
            ref = ncc_accuracy(test[layer][j].numpy(), y_test, means=means)
            assert got[j, layer].item() == ref
    own = laws.ncc_to_centres(train, torch.tensor(y_train),
                              laws.class_centres(train, torch.tensor(y_train)))
    ref = [[ncc_accuracy(h[j].numpy(), y_train) for h in train] for j in range(2)]
    np.testing.assert_array_equal(own.numpy(), ref)  # train NCC: the measure's own


def test_training_centres_differ_from_the_test_sets_own():
    """Test samples shifted by a class-independent offset: their own means still separate
    them perfectly, the training means (Galanti et al.'s classifier) do not."""
    y = np.repeat(np.arange(2), 20)
    train = [torch.tensor(np.where(y[:, None] == 0, -1.0, 1.0)[None] + 0.01 * np.arange(40)[
        None, :, None] / 40)]
    test = [train[0] + 3.0]
    centres = laws.class_centres(train, torch.tensor(y))
    assert laws.ncc_to_centres(test, torch.tensor(y), centres).item() == 0.5
    assert ncc_accuracy(test[0][0].numpy(), y) == 1.0


def test_absent_classes_and_non_finite_features():
    y = np.array([0, 0, 1, 1, 2, 2])
    h = torch.tensor([[[0.0], [0.1], [1.0], [1.1], [2.0], [2.1]]] * 2)
    labels = torch.tensor(np.stack([y, [0, 0, 1, 1, 1, 1]]))  # model 1 never saw class 2
    centres = laws.class_centres([h], labels)
    assert centres.present.tolist() == [[True] * 3, [True, True, False]]
    acc = laws.ncc_to_centres([h], torch.tensor(y), centres)[:, 0]
    assert acc.tolist() == [1.0, 4 / 6]
    bad = h.clone()
    bad[1, 0, 0] = np.nan
    acc = laws.ncc_to_centres([bad], torch.tensor(y), laws.class_centres([h], torch.tensor(y)))
    assert acc[0, 0] == 1.0 and np.isnan(acc[1, 0].item())
    acc = laws.ncc_to_centres([h], torch.tensor(y), laws.class_centres([bad], torch.tensor(y)))
    assert acc[0, 0] == 1.0 and np.isnan(acc[1, 0].item())


def test_measure_model_carries_the_statistics_and_the_training_centres_ncc():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 12), nn.ReLU(),
                          nn.Linear(12, 3)).double()
    y, y_test = torch.arange(120) % 3, torch.arange(60) % 3
    x = torch.randn(120, 6, dtype=torch.float64) + 2 * y[:, None]
    x_test = torch.randn(60, 6, dtype=torch.float64) + 2 * y_test[:, None] + 0.5
    ds = measure_model(model, {"train": (x, y), "test": (x_test, y_test)}, batch_size=25)
    for split in ("train", "test"):
        curve = ds["load_curve"].sel(split=split, measure="fuzziness").values
        r, slope = _pearson_and_slope(curve)
        assert ds["pearson_r"].sel(split=split) == pytest.approx(r, abs=1e-12)
        assert ds["decay_ratio"].sel(split=split) == pytest.approx(math.exp(slope), rel=1e-12)
    feats = [x, torch.relu(model[0](x)), torch.relu(model[2](torch.relu(model[0](x))))]
    test_feats = [x_test, torch.relu(model[0](x_test)),
                  torch.relu(model[2](torch.relu(model[0](x_test))))]
    for k in range(3):
        h = feats[k].detach().numpy()
        means = np.stack([h[y.numpy() == c].mean(0) for c in range(3)])
        ref = ncc_accuracy(test_feats[k].detach().numpy(), y_test, means=means)
        assert ds["ncc_train_centres"].sel(split="test").values[k] == ref
    np.testing.assert_array_equal(ds["ncc_train_centres"].sel(split="train"),
                                  ds["load_curve"].sel(split="train", measure="ncc"))
    ncc = ds["load_curve"].sel(split="train", measure="ncc").values
    hit = [k for k in (1, 2) if ncc[k] >= 0.99]
    expected = hit[0] if hit else np.nan
    np.testing.assert_array_equal(ds["effective_depth"].sel(split="train"), expected)
    one = measure_model(model, (x, y), measures=["trace_ratio"])
    assert "ncc_train_centres" not in one  # one split: nothing to classify with its centres
    assert np.isnan(one["pearson_r"]) and np.isnan(one["effective_depth"])


def test_measure_model_without_the_input_lets_the_first_layer_be_the_effective_depth():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(),
                          nn.Linear(8, 2)).double()
    y = torch.arange(40) % 2
    x = torch.randn(40, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    x[:, 0] += 50.0 * y  # separable at once
    ds = measure_model(model, (x, y), layers=["1", "3"], measures=["ncc"])
    ncc = ds["load_curve"].sel(measure="ncc").values
    hit = [k for k in (0, 1) if ncc[k] >= 0.99]
    np.testing.assert_array_equal(ds["effective_depth"], hit[0] if hit else np.nan)
    assert np.isnan(ds["pearson_r"])  # two layers: no correlation to speak of


def test_the_ncc_does_not_depend_on_the_thread_count():
    rng = np.random.default_rng(4)
    y = np.arange(300) % 4
    train = _layers(rng, 3, 300, y)
    results = []
    for threads in (1, 2):
        old = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            centres = laws.class_centres(train, torch.tensor(y))
            results.append((laws.ncc_to_centres(train, torch.tensor(y), centres),
                            [c.clone() for c in centres.means]))
        finally:
            torch.set_num_threads(old)
    assert torch.equal(results[0][0], results[1][0])
    assert all(torch.equal(a, b) for a, b in zip(results[0][1], results[1][1], strict=True))


def test_features_labels_and_centres_of_the_wrong_shape_are_refused_by_name():
    feats = [torch.randn(1, 10, 4), torch.randn(1, 10, 3)]
    y = torch.arange(10) % 2
    centres = laws.class_centres(feats, y)
    with pytest.raises(ConfigError, match="features must be a non-empty list"):
        laws.class_centres([], y)
    with pytest.raises(ConfigError, match="features must be a non-empty list"):
        laws.class_centres([torch.randn(10, 4)], y)  # no model axis
    with pytest.raises(ConfigError, match="labels must be integer"):
        laws.class_centres(feats, y + 0.5)
    with pytest.raises(ConfigError, match="centres must be of the same M models"):
        laws.ncc_to_centres([torch.randn(3, 10, 4), torch.randn(3, 10, 3)], y, centres)
    with pytest.raises(ConfigError, match="centres must be of the same M models"):
        laws.ncc_to_centres([torch.randn(1, 10, 3), torch.randn(1, 10, 3)], y, centres)
    with pytest.raises(ConfigError, match=r"labels must be \(N,\)"):
        laws.ncc_to_centres(feats, y[:4], centres)


@pytest.mark.parametrize(("acc", "threshold", "name"), [
    ([0.5, 5.0, 1.0], 0.99, "ncc_accuracy"), ([0.5, -0.1, 1.0], 0.99, "ncc_accuracy"),
    ([0.5, 1.0, 1.0], 0.0, "threshold"), ([0.5, 1.0, 1.0], float("nan"), "threshold")])
def test_effective_depth_refuses_accuracies_and_thresholds_outside_their_range(acc, threshold,
                                                                               name):
    with pytest.raises(ConfigError, match=f"^{name} must be"):
        laws.effective_depth(acc, threshold=threshold)
