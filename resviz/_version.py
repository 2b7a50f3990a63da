"""The package's version: the one place it is written. pyproject.toml reads it
(``[tool.setuptools.dynamic]``), so the wheel's metadata and ``resviz.__version__``
cannot disagree."""

__version__ = "0.2.0"
