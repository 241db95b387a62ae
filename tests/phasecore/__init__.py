"""Tests of phasecore."""
