"""The peers benchmark (see run.py)."""
