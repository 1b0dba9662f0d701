"""What every tier builds on; no tier, no profile index, no I/O of its own.

- :mod:`.effects` / :mod:`.plans`: operations written once as plans (generators of steps),
  and the sync and async drivers that run them.
- :mod:`.layout`: where a profile's data lives in the store (:class:`~.layout.ProfileLayout`).
- :mod:`.validate` and :mod:`.labels`: checks at the edge; namespace labels and reaching them
  without wildcards.
- :mod:`.tokens`, :mod:`.dates`, :mod:`.crypto`: token estimates, relative dates and
  timestamps, encryption at rest.

``core`` imports only ``config``, ``records`` and the packages below ``memory``.
"""
