"""Where batches live, free of Prefect: stores, reading, atomic writing, paths under a data root."""

from selection_storage.directory import find_batches, find_stale_batches
from selection_storage.stores import write_atomic, write_atomic_group

__all__ = ["find_batches", "find_stale_batches", "write_atomic", "write_atomic_group"]
