"""The package's version and its public home: the one place each is written.

pyproject.toml reads the version (``[tool.setuptools.dynamic]``), so the wheel's metadata
and ``resviz.__version__`` cannot disagree; its ``[project.urls]`` name ``REPOSITORY``
(tests/install/test_wheel.py checks they match), and an exported notebook says to install
from it."""

__version__ = "0.3.0"
REPOSITORY = "https://github.com/resviz/resviz"
