"""Channel links: the ids one person has on each gateway, linked to one contact.

A person who reaches the agent through two gateways arrives with two ids (``"telegram:123"``,
``"email:ana@example.com"``). :meth:`Profile.link_contact <langmem_edge.memory.Profile.
link_contact>` records that an id is a contact; :meth:`Profile.contact_for
<langmem_edge.memory.Profile.contact_for>` turns the id a gateway gives into that contact,
so whatever the channel, the run's ``contact`` (and so the contact-scoped memories) is one.

Each link is one item under ``(*R, "contacts")`` (:attr:`ProfileLayout.contacts
<langmem_edge.memory.core.layout.ProfileLayout.contacts>`), key = the channel id, value
``{"profile", "channel", "contact"}``, never embedded. Linking again moves the id to the new
contact (the last write wins); an id never linked is its own contact. Deleting the profile
deletes its links; export carries them (``contact_link`` lines).
"""

from __future__ import annotations

from typing import Any

from langgraph.store.base import BaseStore, GetOp, PutOp

from langmem_edge.errors import InvalidInputError
from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.plans import Plan, batch, planned

__all__ = ["MAX_CHANNEL_ID_CHARS", "ContactMethods", "plan_contact_for", "plan_link_contact"]

MAX_CHANNEL_ID_CHARS = 200
"""Longest channel id or contact a link takes (the limit of contact names elsewhere)."""


def _checked(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be a non-empty string, got {value!r}")
    if len(value) > MAX_CHANNEL_ID_CHARS:
        raise InvalidInputError(f"{name} is {len(value)} characters; at most "
                                f"{MAX_CHANNEL_ID_CHARS} are allowed")
    return value


def plan_link_contact(store: BaseStore, layout: ProfileLayout, channel_id: str, contact: str
                      ) -> Plan[None]:
    """Plan: record that ``channel_id`` is ``contact`` (one put, not embedded)."""
    channel_id = _checked(channel_id, "channel_id")
    contact = _checked(contact, "contact")
    value = {"profile": layout.profile, "channel": channel_id, "contact": contact}
    yield batch(store, [PutOp(layout.contacts, channel_id, value, index=False)])


def plan_contact_for(store: BaseStore, layout: ProfileLayout, channel_id: str) -> Plan[str]:
    """Plan: the contact ``channel_id`` is linked to, or ``channel_id`` itself."""
    channel_id = _checked(channel_id, "channel_id")
    (item,) = yield batch(store, [GetOp(layout.contacts, channel_id)])
    value = getattr(item, "value", None) or {}
    if value.get("profile") != layout.profile or not isinstance(value.get("contact"), str):
        return channel_id
    return str(value["contact"])


class ContactMethods:
    """``Profile``'s channel-link methods (a mixin: it needs the profile's ``_ctx``, with the
    ``store`` and the ``layout``)."""

    _ctx: Any

    @planned
    def link_contact(self, channel_id: str, contact: str) -> Plan[None]:
        """Record that ``channel_id`` (a gateway's id, ``"telegram:123"``) is ``contact``:
        :meth:`contact_for` then turns that id into ``contact``. Linking an id again moves it
        (:mod:`~langmem_edge.memory.core.contacts`)."""
        return plan_link_contact(self._ctx.store, self._ctx.layout, channel_id, contact)

    alink_contact = link_contact.twin

    @planned
    def contact_for(self, channel_id: str) -> Plan[str]:
        """The contact ``channel_id`` is linked to (:meth:`link_contact`), or ``channel_id``
        itself when it was never linked: pass it as the run's ``contact``."""
        return plan_contact_for(self._ctx.store, self._ctx.layout, channel_id)

    acontact_for = contact_for.twin
