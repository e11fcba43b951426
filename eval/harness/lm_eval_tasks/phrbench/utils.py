"""The functions PHRBench's lm-evaluation-harness tasks name (``!function utils.<name>``): phr.eval.harness.lmeval."""

from phr.eval.harness.lmeval import (  # noqa: F401 - named by the task files
    accuracy_b,
    accuracy_bh,
    accuracy_bt,
    delta_accuracy,
    doc_to_target,
    doc_to_text,
    load,
    process_results,
    process_results_headline,
    retention,
)
