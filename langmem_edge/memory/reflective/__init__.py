"""The reflective tier (L4), not built yet: this package is where it goes.

It will hold reflections, goals and learnings written by self-review at high confidence,
over the ``BaseStore`` API like the other tiers, with its config in ``memory/config.py``.
It must not import another tier (an import-linter contract in ``pyproject.toml`` checks it):
reflection, which reads the episodic and semantic tiers and writes this one, lives where
tiers are composed (``memory/profile.py`` and above), not here.
"""
