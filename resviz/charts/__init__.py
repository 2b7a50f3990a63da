"""Altair charts from long-form DataFrames, one function per chart shape: lines and bars
(:mod:`resviz.charts.lines`, which also holds the palette and the projector-size style),
maps, histograms and scatter plots (:mod:`resviz.charts.maps`), and one colour and dash
per variant on every chart (:mod:`resviz.charts.series`). Nothing here
imports streamlit."""

from resviz.charts.lines import *  # noqa: F403 - the package's public names
from resviz.charts.maps import *  # noqa: F403 - the package's public names
from resviz.charts.series import *  # noqa: F403 - the package's public names
