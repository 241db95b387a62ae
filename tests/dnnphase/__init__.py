"""Tests of dnnphase."""
