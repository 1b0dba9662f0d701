"""Where a profile's data lives in the store: every namespace of one profile, in one place.

Under the profile root ``R = (*namespace, "profiles", profile)``::

    (*R, "memories")              the semantic tier's records, key = memory id
    (*R, "access", "by-writer")   one process's access counts of the profile's memories,
                                  key = writer id
    (*R, "deleted")               tombstones of deleted memories (stores without
                                  ``put_existing``: ``index/store_io.py``)
    (*R, "messages", session)     the episodic tier's raw messages, key = message id
    (*R, "overlays", session)     the episodic tier's compaction overlays
    (*R, "sessions")              the episodic tier's session records, key = session id
    (*R, "working", thread)       the working tier: notes, task, turn rows of one thread
    (*R, "reflective", part)      the reflective tier: reflections, goals, job leases
    (*R, "documents", part, ...)  the documents room: records, texts, chunks
    (*R, "contacts")              channel links: key = a gateway's id, value = its contact

Tiers and the index take their namespaces from a :class:`ProfileLayout`, never spell them.
"""

from __future__ import annotations

__all__ = ["ProfileLayout"]


BY_WRITER = "by-writer"
"""The label under ``(*R, "access")`` of the one-row-per-writer access counts."""


class ProfileLayout:
    """The store namespaces of one profile (pure: no I/O)."""

    def __init__(self, namespace: tuple[str, ...], profile: str) -> None:
        self._place((*namespace, "profiles", profile), profile)

    @classmethod
    def from_root(cls, root: tuple[str, ...], profile: str | None = None) -> ProfileLayout:
        """The layout of the profile whose root is ``root`` (``(*namespace, "profiles",
        name)``, or any root a caller chose); ``profile`` defaults to its last label."""
        layout = cls.__new__(cls)
        layout._place(tuple(root), profile if profile is not None else root[-1])
        return layout

    def _place(self, root: tuple[str, ...], profile: str) -> None:
        self.profile = profile
        self.root = root
        self.memories = (*root, "memories")
        self.messages = (*root, "messages")
        self.access = (*root, "access")
        self.sessions = (*root, "sessions")
        self.contacts = (*root, "contacts")

    def session_messages(self, session_id: str | None = None) -> tuple[str, ...]:
        """``(*R, "messages")`` or, with a session, ``(*R, "messages", session_id)``."""
        return (*self.messages, session_id) if session_id else self.messages

    def overlays(self, session_id: str) -> tuple[str, ...]:
        """``(*R, "overlays", session_id)``."""
        return (*self.root, "overlays", session_id)

    def working(self, thread: str | None = None) -> tuple[str, ...]:
        """``(*R, "working")`` or, with a thread, ``(*R, "working", thread)``."""
        return (*self.root, "working", thread) if thread else (*self.root, "working")

    def reflective(self, part: str | None = None) -> tuple[str, ...]:
        """``(*R, "reflective")`` or one part of it (``reflections``, ``goals``, ``jobs``)."""
        return (*self.root, "reflective", part) if part else (*self.root, "reflective")

    def documents(self, part: str | None = None, document_id: str | None = None
                  ) -> tuple[str, ...]:
        """``(*R, "documents")``, one part of it (``records``, ``texts``, ``chunks``), or
        that part of one document."""
        base = (*self.root, "documents")
        if part is None:
            return base
        return (*base, part, document_id) if document_id else (*base, part)

    @property
    def access_by_writer(self) -> tuple[str, ...]:
        """The access-count rows of the profile, one per writer (key): ``{"counts": {memory
        id: [count, last ISO]}}``, the writer's cumulative counts (a label no memory id
        takes: ids are hex)."""
        return (*self.access, BY_WRITER)
