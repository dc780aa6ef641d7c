"""Maintenance, I/O-free: one module per verb, each an operation the savers run.

Bottom to top (a module imports only those above it in this list, and
``_heads`` sits between ``deleting`` and ``pruning``: a write that finds its
thread expired reaps it):

* ``threads``: reading a whole thread (items, outline, keys) and deleting items;
* ``keep``: the delta-safe keep-set and deleting what it does not keep;
* ``deleting``: ``delete_thread``, ``delete_for_runs``, reaping one expired thread;
* ``pruning``: ``prune`` and ``prune_thread``;
* ``copying``: ``copy_thread`` and ``migrate_tenant_thread``;
* ``sweeps``: the table-wide jobs (reaper, expired purge, pruner, orphan sweeper);
* ``steps``: the resumable, step-wise forms the maintenance Lambda runs.
"""
