"""Encryption at rest: AES-256-GCM for memories written with ``encrypted=True``."""

# ruff: noqa: F811 - pytest fixtures imported from test_memory_support are redefined as parameters

from __future__ import annotations

import pytest
from langgraph.store.base import BaseStore
from test_memory_support import embed, make_store, store, texts  # noqa: F401 - fixtures

from langmem_edge.errors import ConfigurationError, DecryptionError, InvalidInputError
from langmem_edge.memory import AgentMemory, generate_encryption_key
from langmem_edge.memory.core.crypto import MemoryCipher
from langmem_edge.testing import FakeEmbeddings

NS = ("langmem_edge", "profiles", "p", "memories")
SECRET = "Passport number is X1234567"


def test_encrypted_text_never_reaches_the_store(store: BaseStore, embed: FakeEmbeddings) -> None:
    key = generate_encryption_key()
    p = AgentMemory(store, encryption_key=key).profile("p")
    before = embed.texts_embedded
    rec = p.remember(SECRET, key="identity.passport", encrypted=True)
    assert embed.texts_embedded == before  # never embedded
    assert rec.text == SECRET and rec.encrypted and rec.embedding_status == "skipped"
    raw = store.get(NS, rec.id)
    assert raw is not None and "X1234567" not in str(raw.value)
    assert raw.value["text"] == "" and raw.value["ciphertext"].startswith("v1:")
    assert p.get(rec.id).text == SECRET
    assert p.recall("number X1234567", fill=False).count == 0  # not keyword-indexed
    res = p.recall("identity.passport")  # the key is plaintext: found by key
    assert texts(res) == [SECRET]
    assert SECRET in p.summary()


def test_wrong_or_missing_key_is_a_clear_error(store: BaseStore) -> None:
    p = AgentMemory(store, encryption_key=generate_encryption_key()).profile("p")
    rec = p.remember(SECRET, key="identity.passport", encrypted=True)
    wrong = AgentMemory(store, encryption_key=generate_encryption_key()).profile("p")
    with pytest.raises(DecryptionError, match="encrypted with key"):
        wrong.get(rec.id)
    with pytest.raises(DecryptionError, match="no encryption_key"):
        AgentMemory(store).profile("p").get(rec.id)
    with pytest.raises(DecryptionError):
        AgentMemory(store).profile("p").recall("identity.passport")


def test_ciphertext_is_bound_to_its_memory(store: BaseStore) -> None:
    key = generate_encryption_key()
    p = AgentMemory(store, encryption_key=key).profile("p")
    a = p.remember("secret A", encrypted=True)
    b = p.remember("secret B", encrypted=True)
    raw_a = store.get(NS, a.id).value
    raw_b = dict(store.get(NS, b.id).value)
    raw_b["ciphertext"] = raw_a["ciphertext"]  # move A's ciphertext onto B
    store.put(NS, b.id, raw_b, index=False)
    fresh = AgentMemory(store, encryption_key=key).profile("p")
    with pytest.raises(DecryptionError, match="wrong key or tampered"):
        fresh.get(b.id)


def test_encrypting_without_a_key_is_refused(store: BaseStore) -> None:
    with pytest.raises(InvalidInputError, match="encryption_key"):
        AgentMemory(store).profile("p").remember("x", encrypted=True)


def test_key_formats() -> None:
    raw = bytes(range(32))
    assert MemoryCipher(raw).key_id == MemoryCipher(bytearray(raw)).key_id
    text = generate_encryption_key()
    cipher = MemoryCipher(text)
    sealed = cipher.seal("hello", associated="ad")
    assert cipher.open(sealed, associated="ad", key_id=cipher.key_id, memory_id="m") == "hello"
    with pytest.raises(DecryptionError):
        cipher.open(sealed, associated="other", key_id=None, memory_id="m")
    for bad in [b"short", "not base64 !!", 42]:
        with pytest.raises(ConfigurationError):
            MemoryCipher(bad)  # type: ignore[arg-type]


def test_encrypted_update_stays_encrypted(store: BaseStore) -> None:
    p = AgentMemory(store, encryption_key=generate_encryption_key()).profile("p")
    rec = p.remember("PIN is 1111", key="secret.pin", encrypted=True)
    new = p.update(rec.id, text="PIN is 2222")
    assert new.encrypted and p.get(new.id).text == "PIN is 2222"
    assert "2222" not in str(store.get(NS, new.id).value)
    assert [m.text for m in p.history("secret.pin")] == ["PIN is 1111", "PIN is 2222"]
