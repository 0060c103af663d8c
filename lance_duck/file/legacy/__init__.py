"""Legacy Lance data files (format 0.1 / 0.2)."""
