"""Searches over a pinned version: full-text (fts.py, query.py)."""
