"""Puts the repository root on sys.path so tests import resviz, ui and the pages."""
