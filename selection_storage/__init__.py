"""The file layer of content-selection, free of Prefect: reading inputs, atomic and grouped
writes, staged files and their stale temporaries, where a run may read and write, and
the chunk plan and part joining of a batch scored in pieces."""
