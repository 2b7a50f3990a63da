"""Replication cards: a published figure, recomputed on the model in hand."""
