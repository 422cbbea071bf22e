"""The extraction engine of content-selection, free of Prefect: pages and their decoding,
the trafilatura, newspaper4k and readability adapters and their options, the killable
worker pool, and building a batch from pages."""
