"""HNSW graphs (not yet)."""
