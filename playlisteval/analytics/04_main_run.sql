-- The main pass of each judge per benchmark, evidence, scope and side order: its first run with any
-- judgment. Later runs of the same kind are sweeps or re-runs (SPEC G6); judge_accuracy_by_run shows
-- every run.
SELECT benchmark_id, judge, evidence, scope, swapped, min(run_id) AS run_id
FROM judgment_facts
GROUP BY ALL
