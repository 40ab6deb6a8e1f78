"""Export evaluation run directories to inspect-ai logs, so ``inspect view`` can open them.

``export_run(RUN_DIR)`` writes one ``.eval`` log per suite into ``RUN_DIR/inspect/`` (or
``out``) with inspect-ai's own types and writer; ``inspect view --log-dir RUN_DIR/inspect``
then browses every sample with its conversation (tool calls and tool results for agentic
suites), score and the run's identity. The export only reads the run; file names are
derived from the run, so exporting again replaces the same files.
"""

from spade.eval.inspect_export._export import DEFAULT_SUBDIR, ExportResult, export_run

__all__ = ["DEFAULT_SUBDIR", "ExportResult", "export_run"]
