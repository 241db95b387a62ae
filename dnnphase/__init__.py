"""Deep networks: batched training, layerwise separation metrics, phase diagrams."""
