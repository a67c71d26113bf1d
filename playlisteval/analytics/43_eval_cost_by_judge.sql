-- Evaluation cost per judge (SPEC K4, paper Table 21): the ledger's eval calls charged to the judge of
-- their run (model_call.run_id = judge_run.id), or to "provider/model" when the call names no judge
-- run. Passes are the distinct runs; tokens (input + output + thinking) for hosted judges, GPU-hours
-- for local ones (priced by the GPU-hour); spend per pass is one scoring of the benchmark.
WITH calls AS (
    SELECT
        coalesce(r.judge, c.provider || '/' || c.model) AS judge,
        c.run_id,
        c.input_tokens + c.output_tokens + c.thinking_tokens AS tokens,
        c.gpu_seconds,
        c.usd
    FROM model_call AS c
    LEFT JOIN judge_run AS r ON r.id = c.run_id
    WHERE c.purpose = 'eval'
)
SELECT
    CASE WHEN grouping(judge) = 1 THEN 'All' ELSE judge END AS judge,
    count(DISTINCT run_id) AS passes,
    count(*) AS calls,
    sum(tokens) AS tokens,
    sum(gpu_seconds) / 3600.0 AS gpu_hours,
    sum(usd) AS spend,
    sum(usd) / nullif(count(DISTINCT run_id), 0) AS spend_per_pass
FROM calls
GROUP BY GROUPING SETS ((judge), ())
