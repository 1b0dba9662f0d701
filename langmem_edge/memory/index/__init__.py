"""The per-process profile index and the change protocol that keeps it exact.

- :mod:`.profile_index`: everything recall needs about one profile, in memory (values, BM25,
  key map, numpy columns for admissibility and the relevance fill).
- :mod:`.changes`: the change protocol over the ``BaseStore`` API, so another process's write
  is visible to the next read.
- :mod:`.access`: this process's writer of a profile's access counts, kept across reloads.
- :mod:`.image`: the index image in the store a new process restores instead of reading
  every record; :mod:`.columns` (the numeric columns) and :mod:`.values` (record values,
  packed until read) hold the parts it restores without a Python object per record.

The index sits above ``core`` and below the tiers that read it.
"""
