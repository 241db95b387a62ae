"""Checks that a written figure is a real picture, not just a file.

What a figure shows is tested through the matplotlib objects that draw it
(``tests/test_figures.py``); this only checks what writing it can get wrong.
"""

from pathlib import Path

import numpy as np


def assert_picture(path, min_width: int = 400, min_height: int = 250) -> np.ndarray:
    """The PNG at ``path`` decodes, is at least this large, is opaque, is not blank, and its
    central region is not one flat colour (a figure whose content was lost, or drawn off the
    canvas, leaves only its margins' text)."""
    import matplotlib.image

    pixels = matplotlib.image.imread(Path(path))  # (H, W, channels) in [0, 1]
    height, width = pixels.shape[:2]
    assert width >= min_width and height >= min_height, (path, pixels.shape)
    if pixels.shape[2] == 4:
        assert pixels[..., 3].min() > 0.99, (path, "transparent pixels")
    ink = np.mean(pixels[..., :3] < 0.5)  # share of dark pixels: lines, text, shading
    assert 0.002 < ink < 0.9, (path, ink)
    centre = pixels[height // 4: 3 * height // 4, width // 4: 3 * width // 4, :3]
    colours, counts = np.unique(np.round(centre * 255).astype(np.uint8).reshape(-1, 3), axis=0,
                                return_counts=True)
    flat = counts.max() / counts.sum()
    assert flat < 0.99 and len(colours) >= 3, (path, "flat centre", flat, len(colours))
    return pixels
