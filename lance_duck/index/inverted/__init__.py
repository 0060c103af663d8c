"""INVERTED (full-text) index readers: token FST, documents, posting blocks, positions, tokenizers."""
