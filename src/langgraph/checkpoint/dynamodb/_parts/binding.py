"""Integrity-bound encryption: a ciphertext opens only where it was written.

LangGraph's ``EncryptedSerializer`` encrypts each payload on its own. Whoever
can write the table or the bucket (a tenant under its own grant, an operator
restoring a backup) cannot read such a payload, but can *move* it: copy one
thread's checkpoint into another thread, an old value of a channel into a newer
checkpoint, one task's write into another's. The reader decrypts it without
complaint and resumes from a state nobody wrote there.

With an encrypting saver, every payload here is sealed together with where it
belongs. The plaintext the cipher encrypts starts with a header::

    0xC1 0x01 | digest(tenant, thread) [16 bytes] | digest(place) [16 bytes] | serialized value

where the *place* is what names the payload inside its thread: the checkpoint
body or metadata (namespace, checkpoint id), a channel value (namespace,
channel, version: a value is shared by every checkpoint that has that version,
and prune may move it to another item, so it is bound to the version, not to an
item), a pending write (namespace, checkpoint id, task id, index, channel) or a
stored request result (request id). The cipher authenticates the header with
the value (an AEAD mode: EAX, GCM), so it cannot be changed without the key,
and the reader compares it with the place it read the payload from: a moved
ciphertext raises :class:`~langgraph.checkpoint.dynamodb.errors.CiphertextBindingError`.
The table name is left out on purpose: a table restored under another name must
stay readable.

The type name marks a sealed payload: ``"<type>+bound1:<cipher>"``. LangGraph's
own ``EncryptedSerializer`` (and this package before binding) would hand
``bound1:<cipher>`` to the cipher, which refuses an unknown name, so an old
reader fails closed instead of misreading. ``0xC1`` is the one byte msgpack
never uses, so a cipher that ignores its name still yields bytes no decoder
accepts.

Copies re-seal: :func:`rebind` opens a payload as the source thread's and seals
it as the target's (with the cipher's current key), keeping the place. It never
deserializes, so it runs no decoder on stored data.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Any, Final

from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.dynamodb.errors import CiphertextBindingError, CorruptPayloadError

__all__ = [
    "HEADER_BYTES",
    "MARK",
    "Bind",
    "body_place",
    "is_sealed",
    "metadata_place",
    "open_sealed",
    "rebind",
    "result_place",
    "seal",
    "seal_serialized",
    "thread_digest",
    "value_place",
    "write_place",
]

#: Prefix of the cipher name in a sealed payload's type (``"msgpack+bound1:aes"``).
MARK: Final = "bound1:"
_START: Final = b"\xc1\x01"
_DIGEST: Final = 16
#: What sealing adds to a payload, before the cipher's own overhead.
HEADER_BYTES: Final = len(_START) + 2 * _DIGEST

Place = tuple[str, ...]
#: Where a payload belongs: (thread id, place). An encrypting saver seals it
#: there, and a read elsewhere raises ``CiphertextBindingError``.
Bind = tuple[str, Place]


def _digest(domain: bytes, parts: Sequence[str]) -> bytes:
    """An unambiguous digest of ``parts`` (each length-prefixed; no separator can be forged)."""
    h = hashlib.sha256(domain)
    for part in parts:
        raw = part.encode("utf-8", "surrogatepass")
        h.update(len(raw).to_bytes(4, "big"))
        h.update(raw)
    return h.digest()[:_DIGEST]


@functools.lru_cache(maxsize=1024)
def thread_digest(tenant: str, thread_id: str) -> bytes:
    """What binds a payload to a thread: its tenant and id (never the partition key's digest form)."""
    return _digest(b"lgdb-thread", (tenant, thread_id))


def body_place(ns: str, checkpoint_id: str) -> Place:
    return ("body", ns, checkpoint_id)


def metadata_place(ns: str, checkpoint_id: str) -> Place:
    return ("metadata", ns, checkpoint_id)


def value_place(ns: str, channel: str, version: str) -> Place:
    return ("value", ns, channel, version)


def write_place(ns: str, checkpoint_id: str, task_id: str, idx: int | str, channel: str) -> Place:
    return ("write", ns, checkpoint_id, task_id, str(idx), channel)


def result_place(request_id: str) -> Place:
    return ("result", request_id)


def is_sealed(type_name: str) -> bool:
    """Whether a payload's type names a sealed ciphertext."""
    return type_name.partition("+")[2].startswith(MARK)


def seal(enc: EncryptedSerializer, value: Any, thread: bytes, place: Place) -> tuple[str, bytes]:
    """``value`` serialized by the inner serializer and encrypted with its binding header."""
    return seal_serialized(enc, enc.serde.dumps_typed(value), thread, place)


def seal_serialized(
    enc: EncryptedSerializer, typed: tuple[str, bytes], thread: bytes, place: Place
) -> tuple[str, bytes]:
    """An already serialized ``(type, bytes)`` encrypted with its binding header."""
    return _encrypt(enc, typed[0], bytes(typed[1]), thread, _digest(b"lgdb-place", place))


def _encrypt(
    enc: EncryptedSerializer, type_name: str, data: bytes, thread: bytes, place: bytes
) -> tuple[str, bytes]:
    cipher_name, ciphertext = enc.cipher.encrypt(_START + thread + place + data)
    if "+" in cipher_name:
        raise ValueError(
            f"cipher name {cipher_name!r} contains '+', which would make its payloads unreadable"
        )
    return f"{type_name}+{MARK}{cipher_name}", ciphertext


def _decrypt(
    enc: EncryptedSerializer, typed: tuple[str, bytes], where: str
) -> tuple[str, bytes, bytes, bytes]:
    """``(inner type, data, thread digest, place digest)`` of a sealed payload."""
    type_name, ciphertext = typed
    inner, _, cipher_part = type_name.partition("+")
    cipher_name = cipher_part[len(MARK) :]
    try:
        plain = enc.cipher.decrypt(cipher_name, ciphertext)
    except Exception as exc:
        # The cipher's message could quote key material or data: its type only.
        # The cipher name is stored in plaintext; it names the key for a key ring.
        raise CorruptPayloadError(
            f"{where}: cannot decrypt cipher {cipher_name[:80]!r} ({type(exc).__name__}): a key this "
            "saver lacks (rotated out of the key ring?), or the ciphertext was altered"
        ) from None
    plain = bytes(plain)
    if len(plain) < HEADER_BYTES or not plain.startswith(_START):
        raise CorruptPayloadError(f"{where}: decrypted payload has no binding header")
    thread = plain[len(_START) : len(_START) + _DIGEST]
    place = plain[len(_START) + _DIGEST : HEADER_BYTES]
    return inner, plain[HEADER_BYTES:], thread, place


def open_sealed(
    enc: EncryptedSerializer,
    typed: tuple[str, bytes],
    thread: bytes,
    place: Place,
    *,
    where: str,
    allow_unbound: bool = False,
) -> tuple[str, bytes]:
    """The inner ``(type, bytes)`` of a payload read at ``(thread, place)``, once its binding matches.

    Raises:
        CiphertextBindingError: the payload is sealed for another thread or
            place (moved or copied there), or is not sealed at all (written
            without binding) and ``allow_unbound`` is off.
        CorruptPayloadError: it does not decrypt, or is not encrypted.
    """
    type_name, ciphertext = typed
    inner, sep, cipher_part = type_name.partition("+")
    if not sep:
        # EncryptedSerializer would pass plaintext through (its migration
        # path): here that is a forgery by someone without the key.
        raise CorruptPayloadError(f"{where}: payload is not encrypted (type {type_name!r})")
    if not cipher_part.startswith(MARK):
        if not allow_unbound:
            raise CiphertextBindingError(
                f"{where}: ciphertext is not bound to its place (written by LangGraph's "
                "EncryptedSerializer or an older version of this package), so it may have been moved "
                "here from another thread; refused. To read such data during a migration, pass "
                "allow_unbound_ciphertext=True to the saver (writes are always bound)"
            )
        try:
            return inner, bytes(enc.cipher.decrypt(cipher_part, ciphertext))
        except Exception as exc:
            raise CorruptPayloadError(
                f"{where}: cannot decrypt cipher {cipher_part[:80]!r} ({type(exc).__name__})"
            ) from None
    inner, data, got_thread, got_place = _decrypt(enc, typed, where)
    if got_thread != thread:
        raise CiphertextBindingError(
            f"{where}: ciphertext belongs to another thread (it was copied or moved here, not "
            "written here); refused"
        )
    if got_place != _digest(b"lgdb-place", place):
        raise CiphertextBindingError(
            f"{where}: ciphertext belongs to another {place[0]} of this thread (moved within the "
            "thread, e.g. an older version put back); refused"
        )
    return inner, data


def rebind(
    enc: EncryptedSerializer,
    typed: tuple[str, bytes],
    source: bytes,
    target: bytes,
    *,
    where: str,
    allow_unbound: bool = False,
) -> tuple[str, bytes]:
    """A sealed payload of thread ``source`` re-sealed for thread ``target``, place kept.

    Encrypted again with the cipher's current key (so a copy also rotates
    keys). Nothing is deserialized. An unbound payload (``allow_unbound``)
    is left as it is: its place is unknown, so it cannot be sealed.

    Raises:
        CiphertextBindingError: the payload is sealed for another thread than
            ``source`` (it was moved into the source), or is unbound.
        CorruptPayloadError: it does not decrypt, or is not encrypted.
    """
    type_name = typed[0]
    if "+" not in type_name:
        raise CorruptPayloadError(f"{where}: payload is not encrypted (type {type_name!r})")
    if not is_sealed(type_name):
        if allow_unbound:
            return typed
        raise CiphertextBindingError(
            f"{where}: ciphertext is not bound to its place, so a copy cannot bind it to the target; "
            "refused (allow_unbound_ciphertext=True copies it unbound)"
        )
    inner, data, got_thread, place = _decrypt(enc, typed, where)
    if got_thread != source:
        raise CiphertextBindingError(
            f"{where}: ciphertext belongs to another thread than the copy's source; refused"
        )
    return _encrypt(enc, inner, data, target, place)
