"""Tests of dnnphase.training."""
