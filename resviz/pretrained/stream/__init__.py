"""The residual stream of a real model as a sum: who writes what into it
(:mod:`~resviz.pretrained.stream.attribution`, direct logit attribution through the
frozen final norm) and where the answer travels along it
(:mod:`~resviz.pretrained.stream.patching`, activation patching of ``x_l``)."""
