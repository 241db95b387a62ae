"""Tests of cross."""
