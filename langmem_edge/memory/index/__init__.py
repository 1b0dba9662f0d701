"""What one operation builds from its read of a profile, and the writes that are its rows.

- :mod:`.store_io`: one read of a profile per operation, and writes that are their rows.
- :mod:`.profile_index`: what an operation builds from that read (values, key map, access
  counts; BM25, admission and the fill computed from them), for itself alone.
- :mod:`.access`: this process's writer of a profile's access counts (its own counter, not
  a copy of the store's data).

Nothing here outlives an operation but the access-count writers and the size hints (which
profiles were last seen large: a routing hint, never data). The index sits above
``core`` and below the tiers that read it.
"""
