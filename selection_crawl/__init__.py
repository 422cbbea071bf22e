"""A crawl as one job, free of Prefect and Dask: its listing of web archives, the work on one archive (done where
it runs), and the job's state, resumed by content.

``unit`` is what a worker imports; ``listing``, ``job`` and ``lease`` (one crawl per output prefix) are the
coordinator's.
"""
