"""What one operation builds from its read of a profile, and the writes that are its rows.

- :mod:`.store_io`: one read of a profile per operation, and writes that are their rows.
- :mod:`.profile_index`: what an operation builds from that read (values, BM25, key map),
  for itself alone; :mod:`.columns` its numeric columns.
- :mod:`.access`: this process's writer of a profile's access counts (its own counter, not
  a copy of the store's data).

Nothing here outlives an operation but the access-count writers. The index sits above
``core`` and below the tiers that read it.
"""
