"""The operations, I/O-free: each a generator the savers run through the engine.

Rule: an operation takes the saver first, yields the requests it needs and
returns its result; no I/O of its own, so one body serves the sync and the
async saver. This wing imports the engine, the parts, ``base`` and ``lock``,
never a saver.

Bottom to top (a module imports only those above it in this list):

* ``requests``: the request shapes several operations share;
* ``fetch``, ``placement``, ``threads``: fetching values, placing a payload
  (item, blob item or S3), reading a whole thread and deleting items;
* ``keep``: the delta-safe keep-set and deleting what it does not keep;
* ``deleting``: ``delete_thread``, ``delete_for_runs``, reaping one expired thread;
* ``heads``: the thread head a write refreshes (a write that finds its
  thread expired reaps it, hence above ``deleting``);
* ``pruning``: ``prune`` and ``prune_thread``;
* ``read``, ``history``: ``get_tuple`` and ``list``;
* ``write``: ``put`` and ``put_writes``;
* ``copying``: ``copy_thread`` and ``migrate_tenant_thread``;
* ``sweeps``: the table-wide jobs (reaper, expired purge, pruner, orphan sweeper);
* ``steps``: the resumable, step-wise forms the maintenance Lambda runs.
"""
