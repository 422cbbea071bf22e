"""A stand-in for an upstream flow that knows nothing of content-selection.

It only takes the path where it writes its batch, and writes one there (a copy
of the sample batch, or of ``--source``): no event, no import of this project.
The selection starts because its run ends Completed: ``select-content/after-flow``
(``content-selection serve --after-flow write-batch-standin --path-parameter output_path``,
or the commented block of ``prefect.yaml``) takes ``output_path`` from the
completed run's parameters.

Run it against a server (``PREFECT_API_URL`` set)::

    python examples/completed_upstream_flow.py /data/batches/today_extracted.json [--source BATCH.json]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from prefect import flow

SAMPLE = Path(__file__).with_name("sample_extracted.json")


@flow(name="write-batch-standin")
def write_batch(output_path: str, source: str = str(SAMPLE)) -> str:
    """Write a batch (here: copy ``source``) to ``output_path``, completely, before the run ends.

    Args:
        output_path: Where the batch is written; should end with ``_extracted.json``.
        source: An existing batch to stand in for real extraction output.
    """
    target = Path(output_path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".", suffix=".tmp")
    os.close(fd)
    try:
        shutil.copyfile(source, tmp)
        os.replace(tmp, target)  # complete before the run can end Completed
    except BaseException:
        os.unlink(tmp)
        raise
    return str(target)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_path")
    parser.add_argument("--source", default=str(SAMPLE))
    args = parser.parse_args()
    print(write_batch(args.output_path, args.source))
