"""The semantic tier (L3): typed memories with verification, supersession and fused recall.

- :mod:`.write`: the write path and record reads (remember, update, forget, delete, list,
  history), as plans.
- :mod:`.recall`: fused channels over one profile, the relevance fill, an answer.
- :mod:`.verification`: write-time verification (model, or the model-free rule).
- :mod:`.scoring`: recency, relevance fill and the composite score.
- :mod:`.context`: :class:`~.context.ProfileContext`, what every plan of the tier needs.

It never imports another tier; what crosses tiers lives in ``memory/profile.py``.
"""
