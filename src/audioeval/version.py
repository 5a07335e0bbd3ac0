"""The package version, importable from every layer without importing the package's entry point."""

__version__ = "0.2.0"
