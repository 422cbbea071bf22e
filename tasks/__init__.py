"""The Prefect tasks of the content-selection stage: each one typed call into the layers below.

Every module here defines tasks (and the small helpers they share); the logic
they call lives in ``selection_core``, ``selection_storage`` and ``selection_extraction``.
"""
