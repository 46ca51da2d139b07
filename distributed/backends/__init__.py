"""The collective backends that ship with ember: ``mpi`` (mpi4py) and ``nccl`` (libnccl via cffi).

They are plugins like a third party's (``distributed/hookspecs.py``): they never import ember and
work on numpy arrays or device addresses.
"""
