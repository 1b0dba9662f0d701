"""The per-process profile index and the change protocol that keeps it exact.

- :mod:`.profile_index`: everything recall needs about one profile, in memory (values, BM25,
  key map, numpy columns for admissibility and the relevance fill).
- :mod:`.changes`: the change protocol over the ``BaseStore`` API, so another process's write
  is visible to the next read.

The index sits above ``core`` and below the tiers that read it.
"""
