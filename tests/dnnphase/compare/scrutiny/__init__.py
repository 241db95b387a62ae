"""Tests of dnnphase.compare.scrutiny."""
