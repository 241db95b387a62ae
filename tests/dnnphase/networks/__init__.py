"""Tests of dnnphase.networks."""
