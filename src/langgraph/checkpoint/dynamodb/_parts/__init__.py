"""The saver's parts: the pure pieces an operation is built from, no requests.

Rule: this wing imports only the package's public base (``errors``,
``schema``, ``clock``, ``codec``, ``serde``), never the engine or an
operation. ``shapes`` reads stored items; ``keys`` names a thread's keys;
``payloads``, ``binding`` and ``objects`` pack, seal and bound payloads;
``caches``, ``chains`` and ``valuecache`` are what a saver remembers between
calls.

Bottom to top: ``shapes``, ``objects``, ``binding``, ``valuecache``;
``keys``, ``chains``, ``payloads``; ``caches``.
"""
