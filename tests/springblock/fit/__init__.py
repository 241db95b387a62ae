"""Tests of springblock.fit."""
