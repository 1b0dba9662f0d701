"""Encryption at rest for memories written with ``encrypted=True``: AES-256-GCM.

The key is 32 bytes supplied by the user (raw bytes, or the URL-safe base64 text that
:func:`generate_encryption_key` returns). Each text is sealed with a fresh 96-bit nonce and the
memory's id and profile as associated data, so a ciphertext copied to another record or
profile does not open. The stored form is ``"v1:" + base64(nonce || ciphertext || tag)`` plus
the key's fingerprint (``key_id``, 16 hex chars of sha256 of the key), which turns a wrong key
into a clear :class:`~langmem_edge.errors.DecryptionError` before any decryption is tried.

Uses the ``cryptography`` package (AESGCM); nothing here is hand-rolled.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os

from langmem_edge.errors import ConfigurationError, DecryptionError

__all__ = ["MemoryCipher", "generate_encryption_key"]

KEY_BYTES = 32
"""AES-256 key length."""

NONCE_BYTES = 12
"""GCM nonce length (96 bits, the recommended size)."""

FORMAT_PREFIX = "v1:"
"""Version tag of the sealed-text format."""


def generate_encryption_key() -> str:
    """A new random 256-bit key as URL-safe base64 text (keep it somewhere safe)."""
    return base64.urlsafe_b64encode(os.urandom(KEY_BYTES)).decode("ascii")


def _key_bytes(key: bytes | str) -> bytes:
    if isinstance(key, str):
        try:
            raw = base64.urlsafe_b64decode(key.encode("ascii"))
        except (binascii.Error, UnicodeEncodeError, ValueError) as e:
            raise ConfigurationError(
                "encryption_key text must be URL-safe base64 of 32 bytes "
                "(see generate_encryption_key())"
            ) from e
    elif isinstance(key, bytes | bytearray):
        raw = bytes(key)
    else:
        raise ConfigurationError(
            f"encryption_key must be bytes or base64 text, got {type(key).__name__}"
        )
    if len(raw) != KEY_BYTES:
        raise ConfigurationError(
            f"encryption_key must be {KEY_BYTES} bytes (AES-256), got {len(raw)}"
        )
    return raw


class MemoryCipher:
    """Seals and opens memory texts with one AES-256-GCM key.

    Args:
        key: 32 raw bytes or their URL-safe base64 text.
    """

    def __init__(self, key: bytes | str) -> None:
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ConfigurationError(
                "encrypted memories need the 'cryptography' package (pip install cryptography)"
            ) from e
        raw = _key_bytes(key)
        self._aead = AESGCM(raw)
        self.key_id = hashlib.sha256(raw).hexdigest()[:16]

    def seal(self, plaintext: str, *, associated: str) -> str:
        """Encrypt ``plaintext``; ``associated`` (memory id and profile) is authenticated."""
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, plaintext.encode("utf-8"), associated.encode("utf-8"))
        return FORMAT_PREFIX + base64.b64encode(nonce + sealed).decode("ascii")

    def open(self, sealed: str, *, associated: str, key_id: str | None, memory_id: str) -> str:
        """Decrypt a sealed text, or raise ``DecryptionError`` naming the memory."""
        from cryptography.exceptions import InvalidTag

        if key_id is not None and key_id != self.key_id:
            raise DecryptionError(
                f"memory {memory_id} was encrypted with key {key_id}; the configured "
                f"encryption_key is {self.key_id}"
            )
        if not sealed.startswith(FORMAT_PREFIX):
            raise DecryptionError(f"memory {memory_id}: unknown ciphertext format")
        try:
            blob = base64.b64decode(sealed[len(FORMAT_PREFIX):], validate=True)
            nonce, body = blob[:NONCE_BYTES], blob[NONCE_BYTES:]
            return self._aead.decrypt(nonce, body, associated.encode("utf-8")).decode("utf-8")
        except (InvalidTag, binascii.Error, ValueError) as e:
            raise DecryptionError(
                f"memory {memory_id} could not be decrypted: wrong key or tampered data"
            ) from e
