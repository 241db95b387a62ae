"""Tests of springblock."""
