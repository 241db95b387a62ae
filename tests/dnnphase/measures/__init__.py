"""Tests of dnnphase.measures."""
