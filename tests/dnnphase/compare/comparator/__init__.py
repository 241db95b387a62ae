"""Tests of dnnphase.compare.comparator."""
