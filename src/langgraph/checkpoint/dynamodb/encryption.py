"""Encryption keys you can rotate: AES-GCM with named keys, for ``EncryptedSerializer``.

LangGraph's ``EncryptedSerializer.from_pycryptodome_aes()`` takes one key and
names every ciphertext ``"aes"``: a new key makes everything written before
unreadable. :class:`AesKeyRing` names each ciphertext by the key that sealed
it, writes with the *current* key and reads with any key still in the ring,
so a key is rotated without rewriting a thread:

1. add the new key to every process's ring, still writing with the old one;
2. make the new key current (processes may switch at different times: each
   reads what the others write);
3. drop the old key once nothing needs it: threads written under it have
   expired (``ttl``), been pruned, or been copied (``copy_thread`` re-seals
   every payload with the current key).

With the savers of this package, every payload is also sealed to where it
belongs and to its inner type (thread, checkpoint, channel version, write; see
``docs/security.md``, "Integrity-bound encryption"): the ring keeps that,
whichever key wrote it.
Reading ciphertext of ``from_pycryptodome_aes`` (named ``"aes"``, AES-EAX)
is supported too: the ring tries its keys on it, for a move to the ring.

Example:
    ```python
    from langgraph.checkpoint.dynamodb import DynamoDBSaver
    from langgraph.checkpoint.dynamodb.encryption import AesKeyRing

    ring = AesKeyRing({"2026-12": new_key, "2026-06": old_key}, current="2026-12")
    saver = DynamoDBSaver(table_name="checkpoints", serde=ring.serializer())
    # or from LANGGRAPH_AES_KEYS="2026-12:<base64 key>,2026-06:<base64 key>" (first: current)
    saver = DynamoDBSaver(table_name="checkpoints", serde=AesKeyRing.from_env().serializer())
    ```
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from typing import Any, Final

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.dynamodb.errors import missing_extra
from langgraph.checkpoint.dynamodb.serde import StateTypesSerializer

__all__ = ["ENV_KEYS", "AesKeyRing"]

#: ``id:base64key`` pairs, comma-separated; the first is the current key.
ENV_KEYS: Final = "LANGGRAPH_AES_KEYS"
_PREFIX: Final = "aesgcm."
_KEY_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_NONCE: Final = 12
_TAG: Final = 16


class AesKeyRing:
    """AES-GCM under named keys: encrypt with the current one, decrypt with any in the ring.

    A ``CipherProtocol`` for LangGraph's ``EncryptedSerializer``. Each
    ciphertext is ``nonce (12 bytes) | ciphertext | tag (16 bytes)`` and its
    cipher name is ``"aesgcm.<key id>"``, so a reader picks the key by name
    and says which one it lacks. Needs ``pycryptodome``
    (``pip install 'langgraph-checkpoint-dynamodb-s3[encryption]'``).

    Args:
        keys: key id -> 16, 24 or 32 bytes of key. Ids are 1-64 characters of
            ``A-Z a-z 0-9 _ . -``.
        current: the id of the key new payloads are encrypted with.

    Example:
        ```python
        ring = AesKeyRing({"k2": os.urandom(32), "k1": old_key}, current="k2")
        saver = DynamoDBSaver(table_name="checkpoints", serde=ring.serializer())
        ```
    """

    def __init__(self, keys: Mapping[str, bytes], *, current: str) -> None:
        if not keys:
            raise ValueError("a key ring needs at least one key")
        for kid, key in keys.items():
            if not isinstance(kid, str) or not _KEY_ID.fullmatch(kid):
                raise ValueError(f"key id {kid!r} must be 1-64 characters of A-Z a-z 0-9 _ . -")
            if not isinstance(key, bytes) or len(key) not in (16, 24, 32):
                raise ValueError(f"key {kid!r} must be 16, 24 or 32 bytes, got {type(key).__name__}")
        if current not in keys:
            raise ValueError(f"current key {current!r} is not in the ring ({', '.join(sorted(keys))})")
        self._keys = dict(keys)
        self.current = current
        try:
            from Crypto.Cipher import AES  # pycryptodome: an optional dependency, imported when used
        except ImportError as exc:
            raise missing_extra(exc, extra="encryption", feature="AesKeyRing (pycryptodome)") from exc

        self._aes: Any = AES

    @property
    def key_ids(self) -> tuple[str, ...]:
        """The ids in the ring, the current one first."""
        return (self.current, *(k for k in self._keys if k != self.current))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, name: str = ENV_KEYS) -> AesKeyRing:
        """A ring from ``LANGGRAPH_AES_KEYS``: ``id:base64key`` pairs, comma-separated, the current first.

        Example:
            ```python
            # LANGGRAPH_AES_KEYS="2026-12:q83v...=,2026-06:3q2+...="
            serde = AesKeyRing.from_env().serializer()
            ```
        """
        text = (os.environ if env is None else env).get(name, "").strip()
        if not text:
            raise ValueError(
                f"{name} is not set (id:base64key pairs, comma-separated, the current key first)"
            )
        keys: dict[str, bytes] = {}
        for entry in text.split(","):
            kid, sep, b64 = entry.strip().partition(":")
            if not sep:
                raise ValueError(f"{name}: entry {kid[:16]!r}... is not id:base64key")
            try:
                keys[kid] = base64.b64decode(b64, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError(f"{name}: key {kid!r} is not valid base64") from None
        return cls(keys, current=text.split(",")[0].strip().partition(":")[0])

    def serializer(self, serde: SerializerProtocol | None = None) -> EncryptedSerializer:
        """An ``EncryptedSerializer`` on this ring; ``serde`` inside it (default: the strict ``StateTypesSerializer``)."""
        return EncryptedSerializer(self, serde if serde is not None else StateTypesSerializer())

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        """``("aesgcm.<current id>", nonce | ciphertext | tag)``."""
        nonce = os.urandom(_NONCE)
        cipher = self._aes.new(self._keys[self.current], self._aes.MODE_GCM, nonce=nonce)
        ciphertext, tag = cipher.encrypt_and_digest(plaintext)
        return _PREFIX + self.current, nonce + ciphertext + tag

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        """The plaintext, by the key the cipher name names; ``"aes"`` (LangGraph's EAX format) by trying each key.

        Raises:
            ValueError: the key is not in the ring, the cipher is unknown, or
                the ciphertext does not authenticate (altered, or another key).
        """
        if ciphername.startswith(_PREFIX):
            kid = ciphername[len(_PREFIX) :]
            key = self._keys.get(kid)
            if key is None:
                raise ValueError(
                    f"key {kid!r} is not in the key ring ({', '.join(self.key_ids)}): add it back to read "
                    "what it encrypted"
                )
            if len(ciphertext) < _NONCE + _TAG:
                raise ValueError("ciphertext too short")
            cipher = self._aes.new(key, self._aes.MODE_GCM, nonce=ciphertext[:_NONCE])
            try:
                return bytes(cipher.decrypt_and_verify(ciphertext[_NONCE:-_TAG], ciphertext[-_TAG:]))
            except ValueError:
                raise ValueError(f"ciphertext under key {kid!r} does not authenticate (altered)") from None
        if ciphername == "aes":  # EncryptedSerializer.from_pycryptodome_aes: nonce(16) | tag(16) | data
            for key in self._keys.values():
                cipher = self._aes.new(key, self._aes.MODE_EAX, nonce=ciphertext[:16])
                try:
                    return bytes(cipher.decrypt_and_verify(ciphertext[32:], ciphertext[16:32]))
                except ValueError:
                    continue
            raise ValueError("no key in the ring decrypts this 'aes' ciphertext")
        raise ValueError(f"unknown cipher {ciphername!r} (this key ring reads 'aesgcm.<id>' and 'aes')")
