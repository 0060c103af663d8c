"""Lance file format 2.0 reader."""
