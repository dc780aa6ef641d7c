"""Integrity-bound encryption: a ciphertext opens only where it was written.

LangGraph's ``EncryptedSerializer`` encrypts each payload on its own. Whoever
can write the table or the bucket (a tenant under its own grant, an operator
restoring a backup) cannot read such a payload, but can *move* it: copy one
thread's checkpoint into another thread, an old value of a channel into a newer
checkpoint, one task's write into another's. The reader decrypts it without
complaint and resumes from a state nobody wrote there.

With an encrypting saver, every payload here is sealed together with where it
belongs and what it is. The plaintext the cipher encrypts starts with a header::

    0xC1 0x02 | digest(tenant, thread) [16] | digest(place) [16] | n [1] | inner type [n] | value

where the *place* is what names the payload inside its thread: the checkpoint
body or metadata (namespace, checkpoint id), a channel value (namespace,
channel, version: a value is shared by every checkpoint that has that version,
and prune may move it to another item, so it is bound to the version, not to an
item), a pending write (namespace, checkpoint id, task id, index, channel) or a
stored request result (request id), and the *inner type* is the inner
serializer's type name (``"msgpack"``, ``"null"``, ``"bytes"``...), which says
how the value's bytes are decoded. The cipher authenticates the header with
the value (an AEAD mode: EAX, GCM), so none of it can be changed without the
key. The reader compares the thread and place with where it read the payload
(a moved ciphertext raises
:class:`~langgraph.checkpoint.dynamodb.errors.CiphertextBindingError`) and
decodes with the sealed inner type, after checking that the stored type name
says the same: a type name rewritten in the plaintext packed header (``null``
for ``msgpack`` read a value back as ``None``, ``bytes`` as its raw bytes, a
rejection ``False`` as the truthy ``b"\xc2"``) raises
:class:`~langgraph.checkpoint.dynamodb.errors.CorruptPayloadError`. The table
name is left out on purpose: a table restored under another name must stay
readable.

The type name marks a sealed payload: ``"<type>+bound2:<cipher>"``. LangGraph's
own ``EncryptedSerializer`` (and this package before binding) would hand
``bound2:<cipher>`` to the cipher, which refuses an unknown name, so an old
reader fails closed instead of misreading. ``0xC1`` is the one byte msgpack
never uses, so a cipher that ignores its name still yields bytes no decoder
accepts. ``bound1`` (an unreleased format whose inner type was not sealed) is
refused. The cipher name is the one part of the type name the seal cannot
hold (the cipher returns it with the ciphertext): it only picks the key, so a
changed name either fails to decrypt or opens the same authenticated plaintext.

Copies re-seal: :func:`rebind` opens a payload as the source thread's, checks
its whole header as a read does, and seals it as the target's (with the
cipher's current key), keeping the place and the sealed inner type. It never
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
    "RETIRED_MARKS",
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

#: Prefix of the cipher name in a sealed payload's type (``"msgpack+bound2:aes"``).
MARK: Final = "bound2:"
#: Marks of earlier, unreleased seal formats, refused: ``bound1`` sealed the
#: thread and place but not the inner type, which the reader took from the
#: plaintext type name (so whoever could write an item could rewrite it).
RETIRED_MARKS: Final = ("bound1:",)
_START: Final = b"\xc1\x02"
_DIGEST: Final = 16
#: What sealing adds to a payload before the cipher's own overhead, besides the inner type name.
HEADER_BYTES: Final = len(_START) + 2 * _DIGEST + 1

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
    """Whether a payload's type names a sealed ciphertext (of the current format)."""
    return type_name.partition("+")[2].startswith(MARK)


def _encrypted_parts(type_name: str, where: str) -> tuple[str, str]:
    """``(inner type, cipher part)`` of an encrypted payload's type; refuses plaintext and retired seals."""
    inner, sep, cipher_part = type_name.partition("+")
    if not sep:
        # EncryptedSerializer would pass plaintext through (its migration
        # path): here that is a forgery by someone without the key.
        raise CorruptPayloadError(f"{where}: payload is not encrypted (type {type_name[:80]!r})")
    if cipher_part.startswith(RETIRED_MARKS):
        raise CorruptPayloadError(
            f"{where}: payload is sealed in the pre-release {cipher_part.partition(':')[0]} format, whose "
            "type was not authenticated; refused (write it again with this version)"
        )
    return inner, cipher_part


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
    # The inner type is sealed with the value: it says how the value's bytes
    # are decoded, and the copy of it in the stored type name is plaintext.
    tname = type_name.encode("ascii")  # the codec stores type names as ASCII, at most 255 bytes
    if len(tname) > 255 or "+" in type_name:
        raise ValueError(f"inner serde type name {type_name[:80]!r} is over 255 bytes or contains '+'")
    cipher_name, ciphertext = enc.cipher.encrypt(
        _START + thread + place + bytes((len(tname),)) + tname + data
    )
    if "+" in cipher_name:
        raise ValueError(
            f"cipher name {cipher_name!r} contains '+', which would make its payloads unreadable"
        )
    return f"{type_name}+{MARK}{cipher_name}", ciphertext


def _plaintext(enc: EncryptedSerializer, cipher_name: str, ciphertext: bytes, where: str) -> bytes:
    """What the cipher decrypts (and authenticates), or ``CorruptPayloadError``."""
    try:
        return bytes(enc.cipher.decrypt(cipher_name, ciphertext))
    except Exception as exc:
        # The cipher's message could quote key material or data: its type only.
        # The cipher name is stored in plaintext; it names the key for a key ring.
        raise CorruptPayloadError(
            f"{where}: cannot decrypt cipher {cipher_name[:80]!r} ({type(exc).__name__}): a key this "
            "saver lacks (rotated out of the key ring?), or the ciphertext was altered"
        ) from None


def _decrypt(
    enc: EncryptedSerializer, typed: tuple[str, bytes], where: str
) -> tuple[str, bytes, bytes, bytes]:
    """``(inner type, data, thread digest, place digest)`` of a sealed payload, its type checked.

    The inner type is the sealed one, and the stored type name must name it:
    a difference is a header rewritten by someone without the key.
    """
    type_name, ciphertext = typed
    stored, cipher_part = _encrypted_parts(type_name, where)
    plain = _plaintext(enc, cipher_part[len(MARK) :], ciphertext, where)
    if len(plain) < HEADER_BYTES or not plain.startswith(_START):
        raise CorruptPayloadError(f"{where}: decrypted payload has no binding header")
    end = HEADER_BYTES + plain[HEADER_BYTES - 1]
    sealed = plain[HEADER_BYTES:end]
    if len(plain) < end or sealed != stored.encode("ascii", "replace"):
        raise CorruptPayloadError(
            f"{where}: the payload's stored type {stored[:80]!r} is not the type it was sealed with "
            f"({sealed.decode('ascii', 'replace')!r}): its header was altered; refused"
        )
    thread = plain[len(_START) : len(_START) + _DIGEST]
    place = plain[len(_START) + _DIGEST : HEADER_BYTES - 1]
    return stored, plain[end:], thread, place


def _open_unbound(enc: EncryptedSerializer, typed: tuple[str, bytes], where: str) -> tuple[str, bytes]:
    """The inner ``(type, bytes)`` of an unbound ciphertext (``allow_unbound``), never a stripped seal.

    Its inner type is not authenticated: that is what ``allow_unbound`` accepts
    for a migration. What it must not accept is a *sealed* payload whose mark was
    removed from the type name (to choose its inner type): its plaintext starts
    with a binding header, which no serializer's output does (``0xC1``, then a
    seal format's version), so it is refused.
    """
    inner, cipher_name = _encrypted_parts(typed[0], where)
    plain = _plaintext(enc, cipher_name, typed[1], where)
    if len(plain) >= HEADER_BYTES - 1 and plain[:1] == b"\xc1" and plain[1] in (1, 2):
        raise CiphertextBindingError(
            f"{where}: a sealed payload whose seal mark was removed from its type name (so that it "
            "would be read unbound, as another type); refused"
        )
    return inner, plain


def open_sealed(
    enc: EncryptedSerializer,
    typed: tuple[str, bytes],
    thread: bytes,
    place: Place,
    *,
    where: str,
    allow_unbound: bool = False,
) -> tuple[str, bytes]:
    """The inner ``(type, bytes)`` of a payload read at ``(thread, place)``, once its whole header matches.

    Raises:
        CiphertextBindingError: the payload is sealed for another thread or
            place (moved or copied there), or is not sealed at all (written
            without binding) and ``allow_unbound`` is off.
        CorruptPayloadError: it does not decrypt, is not encrypted, is sealed
            in a retired format, or its stored type is not the sealed one.
    """
    _, cipher_part = _encrypted_parts(typed[0], where)
    if not cipher_part.startswith(MARK):
        if not allow_unbound:
            raise CiphertextBindingError(
                f"{where}: ciphertext is not bound to its place (written by LangGraph's "
                "EncryptedSerializer or an older version of this package), so it may have been moved "
                "here from another thread; refused. To read such data during a migration, pass "
                "allow_unbound_ciphertext=True to the saver (writes are always bound)"
            )
        return _open_unbound(enc, typed, where)
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
    keys), once it is authenticated as a read would: it decrypts, its stored
    type is the sealed one (which the new seal keeps) and it belongs to
    ``source``. Nothing is deserialized. An unbound payload
    (``allow_unbound``) is decrypted, to refuse a forgery, and left as it
    is: its place is unknown, so it cannot be sealed.

    Raises:
        CiphertextBindingError: the payload is sealed for another thread than
            ``source`` (it was moved into the source), or is unbound.
        CorruptPayloadError: it does not decrypt, is not encrypted, or its
            header was altered.
    """
    _, cipher_part = _encrypted_parts(typed[0], where)
    if not cipher_part.startswith(MARK):
        if allow_unbound:
            _open_unbound(enc, typed, where)
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
