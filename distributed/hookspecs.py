"""The hooks a collective backend implements (entry-point group ``ember.distributed_backends``).

A collective backend moves tensors' bytes between processes with an existing engine (MPI,
NCCL); ember never implements a collective itself. Like a device backend, the plugin marks its
hooks with its own ``pluggy.HookimplMarker("ember")``, never imports ember, and works on plain
data: host buffers are C-contiguous numpy arrays (the tensor's own memory on the CPU, a staging
copy for other devices), device buffers are ``DeviceBuffer`` records (address, element count,
dtype name, device index, stream handle). Registration is cheap; the engine's library is
loaded in the hooks below, the first time a group needs it, and a failure there is reported
with the plugin's message when the backend is asked for.

The communicator a backend returns has ``rank`` and ``size`` attributes and these methods,
each returning a request (``wait(seconds) -> bool``: True when done, False when the time ran out;
``test() -> bool``; raising the engine's error when the operation failed). Reduction ops are
names: ``"sum"``, ``"avg"``, ``"product"``, ``"min"``, ``"max"``, ``"band"``, ``"bor"``,
``"bxor"``; a backend raises ``TypeError``/``ValueError`` for a combination it cannot do.

- ``all_reduce(buf, op)``, ``broadcast(buf, root)``, ``reduce(buf, op, root)`` (in place)
- ``all_gather(send, recv)``: ``recv`` holds ``size`` blocks of ``send``'s length, in rank order
- ``gather(send, recv, root)``, ``scatter(send, recv, root)`` (``recv``/``send`` None off root)
- ``reduce_scatter(send, recv, op)``: ``send`` holds ``size`` blocks of ``recv``'s length
- ``all_to_all(send, recv, send_counts, recv_counts)`` (element counts per peer, in rank order)
- ``send(buf, peer, tag)``, ``recv(buf, peer, tag)`` (``peer`` None: any source; the request's
  ``source`` attribute names the sender once done), ``barrier()``
- ``abort()`` (after a timeout: give up in-flight operations), ``close()``
"""

from __future__ import annotations

import pluggy

PROJECT = "ember"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def ember_collective_backend_info():
    """Describe the backend without loading its engine.

    Returns:
        dict with ``name`` (str, the ``backend=`` string: ``"mpi"``), ``device_types`` (list of
        the tensor device types it serves), ``memory`` (``"host"``: buffers are numpy arrays,
        tensors on other devices are staged through host memory; ``"device"``: buffers are
        ``DeviceBuffer`` records on the tensor's device), and optionally ``priority`` (int, the
        default backend of a device type is the one with the highest), ``needs_store`` (bool:
        the backend exchanges bootstrap data through the rendezvous store, so the job needs
        ``MASTER_ADDR``/``MASTER_PORT`` or a ``tcp://`` init_method) and ``description``.
    """


@hookspec
def ember_collective_backend_world():
    """The place of this process in a job the backend's own launcher started.

    Called by ``init_process_group`` before the rendezvous, for backends that have a launcher
    (MPI's ``mpirun``). Loads the engine.

    Returns:
        ``(rank, world_size)``, or None when the backend leaves that to the rendezvous
        (``RANK``/``WORLD_SIZE``, ``init_method``).
    """


@hookspec
def ember_collective_backend_create(options):
    """Create the communicator of one process group for one device type.

    Args:
        options: dict with ``rank`` and ``world_size`` (this process's rank in the group and
            the group's size), ``global_ranks`` (the world ranks of the group's members, in
            group order), ``store`` (an object with ``set(key, bytes)``, ``get(key) -> bytes``
            and ``add(key, n)``, private to this group and device type; None when the job has
            no rendezvous store), ``timeout`` (seconds), ``device_type`` and ``group_name``.

    Returns:
        the communicator (see the module docstring). Called by the group's members only,
        all together, the first time the group runs a collective on that device type.
    """
