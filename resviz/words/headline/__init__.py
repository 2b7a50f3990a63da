"""Each section's headline: its finding in one short line, with the big measured
figure it rests on, computed from the same numbers (and the same per-seed outcomes) as
the section's full account (:mod:`resviz.words`). One module per page; the line and its
figures are a :class:`~resviz.words.headline.core.Headline`."""

from resviz.words.headline.core import Figure, Headline, seeds_headline

__all__ = ["Figure", "Headline", "seeds_headline"]
