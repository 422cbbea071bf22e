"""Prefect flows of the content-selection stage."""
