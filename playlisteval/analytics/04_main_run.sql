-- The main run of each judge per benchmark, evidence, scope and side order: the run made with the
-- configured [eval] options (judge_run_options.is_default), whatever order the runs were made in; the
-- first such run if there are several. Every other run is a sweep (judge_sweeps shows them, labelled
-- by what they change); judge_accuracy_by_run shows every run.
SELECT r.benchmark_id, r.judge, r.evidence, r.scope, r.swapped, min(r.id) AS run_id
FROM judge_run AS r
JOIN judge_run_options AS o ON o.run_id = r.id
WHERE o.is_default
GROUP BY ALL
