"""Packing and unpacking stored payloads under a saver's policy.

What lives here: :class:`Payloads`, reached by operations as
``s.payloads``: serialize (through ``saver.serde`` only, never pickle), seal
to the payload's thread, place and inner type when the saver encrypts (``binding``),
bound what one payload may cost a reader (bytes and decoded objects), and
compress (``codec``). It reads the saver's settings at each call rather than
copying them, since LangGraph's ``with_allowlist`` copies a saver and gives
the copy another ``serde``.
"""

from __future__ import annotations

from typing import Any, Protocol

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.dynamodb._parts import binding, objects
from langgraph.checkpoint.dynamodb._parts.binding import Bind
from langgraph.checkpoint.dynamodb.codec import PayloadCodec
from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError, PayloadTooLargeError
from langgraph.checkpoint.dynamodb.serde import RevivalError

__all__ = ["PayloadPolicy", "Payloads"]


class PayloadPolicy(Protocol):
    """What :class:`Payloads` reads from its saver (``BaseDynamoDBSaver`` has all of it)."""

    serde: SerializerProtocol
    codec: PayloadCodec
    max_payload_size: int
    max_payload_objects: int
    allow_unbound_ciphertext: bool

    @property
    def tenant_prefix(self) -> str: ...

    def dump_payload(self, value: Any, *, where: str, bind: Bind) -> tuple[str, bytes]: ...


class Payloads:
    """A saver's payload policy: what ``pack`` writes, ``unpack`` accepts.

    Example:
        >>> from langgraph.checkpoint.dynamodb import DynamoDBSaver
        >>> saver = DynamoDBSaver(table_name="t")
        >>> packed = saver.payloads.pack({"x": 1}, "a value", ("t1", ("v", "x", "1")))
        >>> saver.payloads.unpack(packed, "a value", ("t1", ("v", "x", "1")))
        {'x': 1}
    """

    __slots__ = ("_saver",)

    def __init__(self, saver: PayloadPolicy) -> None:
        self._saver = saver

    @property
    def seals(self) -> bool:
        """Whether payloads are encrypted, and so sealed to where they belong (``binding``)."""
        return isinstance(self._saver.serde, EncryptedSerializer)

    def serialize(self, value: Any, bind: Bind) -> tuple[str, bytes]:
        """``value`` serialized, and encrypted sealed to ``bind`` (thread id, place) if the saver encrypts."""
        s = self._saver
        serde = s.serde
        if isinstance(serde, EncryptedSerializer):
            thread_id, place = bind
            inner = serde.serde.dumps_typed(value)
            self.check_objects(inner, bind)
            return binding.seal_serialized(
                serde, inner, binding.thread_digest(s.tenant_prefix, thread_id), place
            )
        typed = serde.dumps_typed(value)
        self.check_objects(typed, bind)
        return typed

    def check_objects(self, typed: tuple[str, bytes], bind: Bind) -> None:
        """Refuse to write what a reader would refuse to decode (``max_payload_objects``)."""
        limit = self._saver.max_payload_objects
        if len(typed[1]) > limit and objects.count_objects(typed[0], typed[1], limit) > limit:
            raise PayloadTooLargeError(
                f"a {bind[1][0]} of thread {bind[0]!r} serializes to more than max_payload_objects "
                f"({limit:,} objects), the most a reader decodes; nothing was written. If it is "
                "legitimate, raise max_payload_objects on every saver that reads this thread"
            )

    def pack(self, value: Any, where: str, bind: Bind) -> bytes:
        """``value`` serialized, encrypted (sealed to ``bind``: thread id, place) and compressed."""
        s = self._saver
        # Through the saver's public ``dump_payload``: a subclass that overrides it
        # (a format change, a test of legacy items) changes what is stored.
        typed = s.dump_payload(value, where=where, bind=bind)
        if len(typed[1]) > s.max_payload_size:
            # Readers refuse a payload over the limit (``unpack``): stored, it
            # would leave the thread's latest checkpoint unreadable, so a
            # resume fails long after the write that caused it. Refused here,
            # the previous checkpoint stays the thread's latest.
            raise PayloadTooLargeError(
                f"{where} serializes to {len(typed[1]):,} bytes, more than max_payload_size "
                f"({s.max_payload_size:,} bytes), the most a reader accepts; nothing was written. "
                "If it is legitimate, raise max_payload_size on every saver that reads this thread"
            )
        return s.codec.pack(typed)

    def unpack(self, packed: bytes, where: str, bind: Bind) -> Any:
        """The value of a stored payload read at ``bind`` (thread id, place), under the saver's policy."""
        s = self._saver
        typed = s.codec.unpack(packed, where=where, max_size=s.max_payload_size)
        serde: SerializerProtocol = s.serde
        if isinstance(serde, EncryptedSerializer):
            thread_id, place = bind
            typed = binding.open_sealed(
                serde,
                typed,
                binding.thread_digest(s.tenant_prefix, thread_id),
                place,
                where=where,
                allow_unbound=s.allow_unbound_ciphertext,
            )
            serde = serde.serde
        objects.check_objects(typed, s.max_payload_objects, where)
        try:
            return serde.loads_typed(typed)
        except RevivalError as exc:  # ours: names a type and the fix, never data
            raise CorruptPayloadError(f"{where}: cannot deserialize payload: {exc}") from exc
        except Exception as exc:
            # Another serializer's message may quote the (decrypted) payload: its type only.
            raise CorruptPayloadError(
                f"{where}: cannot deserialize payload ({type(exc).__name__}, {len(typed[1]):,} bytes)"
            ) from None

    def rebind(self, packed: bytes, source: tuple[str, str], target: tuple[str, str], where: str) -> bytes:
        """A stored payload of thread ``source`` (tenant, id) sealed for ``target`` instead (copies).

        Unchanged where the saver does not encrypt. Nothing is deserialized.
        """
        s = self._saver
        serde = s.serde
        if not isinstance(serde, EncryptedSerializer):
            return packed
        typed = s.codec.unpack(packed, where=where, max_size=s.max_payload_size)
        out = binding.rebind(
            serde,
            typed,
            binding.thread_digest(*source),
            binding.thread_digest(*target),
            where=where,
            allow_unbound=s.allow_unbound_ciphertext,
        )
        return packed if out is typed else s.codec.pack(out)
