"""Reusable widgets of the app: rankings, latency, preview, tuning, status, query."""
