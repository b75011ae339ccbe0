"""The annotation workbench's logic: detectors that suggest failure labels with evidence, the label book
(suggestions, blame, final labels, queues) over the run store, agreement between annotators, and the
Parquet dataset export. No Gradio here."""
