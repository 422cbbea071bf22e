"""A crawl as one job, free of Prefect and Dask: its listing of web archives, the work on one archive (done where
it runs, in committed pieces), the job's state, resumed by content, and its lease on the output prefix.

``unit`` is what a worker imports; ``listing``, ``job`` and ``lease`` are the coordinator's.
"""
