"""Runs as files and traces other tools read: JSONL, the Parquet dataset, HTML, OpenTelemetry, Who&When and MP-Bench."""
