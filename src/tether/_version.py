"""The package version, in a module of its own so any layer can read it without importing
the package root (whose lazy `Collection` would reach the top layers)."""

__version__ = "0.1.0"
