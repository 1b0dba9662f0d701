"""The working tier (L1), not built yet: this package is where it goes.

It will hold turn checkpoints (resume a turn untouched for 45 s from its results), working
notes and the ongoing task of a thread, over the ``BaseStore`` API like the other tiers, with
its config in ``memory/config.py``. It must not import another tier (an import-linter
contract in ``pyproject.toml`` checks it); what crosses tiers goes in ``memory/profile.py``.
"""
