"""The health report for the people who own the documents (`tether health`): content gaps
from the audit, contradictions between documents in force together, staleness, hygiene and
feedback (see `tether.health.report`)."""
