"""Judge and retriever evaluation (SPEC G, R): evidence, judge runs, verdicts, retriever runs, scorers."""
