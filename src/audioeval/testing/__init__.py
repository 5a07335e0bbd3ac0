"""Test utilities shipped with the package (used by the test suite and the bench scripts)."""
