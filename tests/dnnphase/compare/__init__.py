"""Tests of dnnphase.compare."""
