"""Tests of scripts."""
