"""The selection engine: a batch planned into chunks, read, selected and written as a stream (no Prefect)."""

from selection_engine.engine import plan_batch, plan_jobs, select_file, select_job
from selection_engine.lookup import find_article

__all__ = ["find_article", "plan_batch", "plan_jobs", "select_file", "select_job"]
