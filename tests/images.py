"""Checks that a written figure is a real picture, not just a file."""

from pathlib import Path

import numpy as np


def assert_picture(path, min_width: int = 400, min_height: int = 250) -> np.ndarray:
    """The PNG at ``path`` decodes, is at least this large and is not blank."""
    import matplotlib.image

    pixels = matplotlib.image.imread(Path(path))  # (H, W, channels) in [0, 1]
    height, width = pixels.shape[:2]
    assert width >= min_width and height >= min_height, (path, pixels.shape)
    ink = np.mean(pixels[..., :3] < 0.5)  # share of dark pixels: lines, text, shading
    assert 0.002 < ink < 0.9, (path, ink)
    return pixels
