"""Deployments of the content-selection stage (served from one process, or via prefect.yaml)."""
