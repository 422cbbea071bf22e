"""Prefect tasks of the content-selection stage: each one typed call into the layers below."""
