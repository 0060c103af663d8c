"""Readers for Lance files of format 2.1 and later (2.1, 2.2, 2.3): structural page layouts and compression."""
