"""The Prefect shell's support, under the flows and the tasks: task runners, flow parameters and refusals, the
event contract and its triggers, run loggers, task options."""
