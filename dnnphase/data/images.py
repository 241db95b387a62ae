"""Images as features: pixels scaled to [0, 1], optionally resized (antialiased bilinear),
flattened channel-major; shared by the image loaders."""

from __future__ import annotations

import numpy as np

from phasecore.checks import check_int, check_memory, host_available_memory

__all__ = ["check_size", "image_features", "image_shape", "resize_note"]

#: Images are resized in chunks of this many, to bound peak memory on full CIFAR-10.
_RESIZE_CHUNK = 8192


def check_size(size) -> int | None:
    """The image side ``size`` (a positive int), or None for the native resolution."""
    return None if size is None else check_int("size", size, minimum=1)


def image_features(images: np.ndarray, max_value: float, size: int | None) -> np.ndarray:
    """Images ``(N, C, H, W)`` in 0..max_value -> features ``(N, C*size*size)`` float32 in [0, 1].

    ``size`` None keeps the native resolution; otherwise antialiased bilinear
    resize to size x size (docs/data.md). Channel-major flattening.
    """
    n, c, h, w = images.shape
    if size is not None and (size, size) != (h, w):
        # the resized features, and their copy when the chunks are joined: refused before
        # any is made (--size 1000 on Fashion-MNIST asked for 32.8 GB, then failed inside)
        check_memory("size", 2 * 4 * n * c * size * size, host_available_memory(),
                     f"{n} images resized to size {size} ({c} x {size} x {size} float32 each)",
                     f"use a smaller size: the images are {h} x {w} as stored")
    x = images.astype(np.float32) / np.float32(max_value)
    if size is not None and (size, size) != (h, w):
        import torch  # only needed here; keeps `import dnnphase.data` light
        import torch.nn.functional as F

        chunks = [np.zeros((0, c, size, size), np.float32)]  # keeps n = 0 well-defined
        with torch.no_grad():
            for i in range(0, n, _RESIZE_CHUNK):
                chunks.append(F.interpolate(
                    torch.from_numpy(x[i:i + _RESIZE_CHUNK]), size=(size, size),
                    mode="bilinear", antialias=True, align_corners=False).numpy())
        x = np.concatenate(chunks)
        # Convex weights keep values in [0, 1]; clip only float rounding at the ends.
        np.clip(x, 0.0, 1.0, out=x)
    return np.ascontiguousarray(x.reshape(n, -1))


def resize_note(height: int, width: int, size: int | None) -> str:
    """How images of ``height`` x ``width`` were resized, for the data's ``info``."""
    if size is None or (size, size) == (height, width):
        return f"none ({height}x{width})"
    return f"{height}x{width} -> {size}x{size}, torch bilinear antialias=True"


def image_shape(images: np.ndarray, size: int | None) -> tuple[int, int, int]:
    """(C, H, W) of images ``(N, C, H, W)`` after :func:`image_features` with ``size``."""
    c, h, w = images.shape[1:]
    return (int(c), int(h), int(w)) if size is None else (int(c), size, size)
