"""Tests of dnnphase.sweeps."""
