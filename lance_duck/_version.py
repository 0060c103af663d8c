"""The package version (one place: the root facade, the CLI and the build read it)."""
__version__ = "0.1.0"
