-- Evaluation cost per judge and protocol (SPEC K4, paper Table 21): the ledger's eval calls charged to the
-- judge of their run (model_call.run_id = judge_run.id), or to "provider/model" when the call names no judge
-- run. A row per judge and protocol: the evidence, scope and sides of its runs and whether they are the main
-- run or a sweep (labelled by what it changes, as judge_sweeps labels it), so a pass of an expensive sweep
-- (agentic, 16 frames, high thinking) is never averaged into the main pass (issue 41). Passes are the
-- distinct runs; tokens (input + output + thinking) for hosted judges, GPU-hours for local ones (priced by
-- the GPU-hour); spend per pass is one scoring of the benchmark under that protocol. The 'All' row totals
-- every call and gives no per-pass figure: a mean over different protocols is no pass's cost. The ledger is
-- read as its sums (call_groups: store/call_groups.py): a group counts its calls.
WITH calls AS (
    SELECT
        coalesce(r.judge, c.provider || '/' || c.model) AS judge,
        CASE
            WHEN r.id IS NULL THEN 'no judge run'
            ELSE concat_ws(' · ', r.evidence, r.scope, CASE WHEN r.swapped THEN 'swapped' END,
                CASE WHEN s.main THEN 'main'
                     WHEN coalesce(s.varies, '') = '' THEN 'sweep: a repeat of the main run'
                     ELSE 'sweep: ' || s.varies END)
        END AS protocol,
        s.main,
        c.run_id,
        c.calls,
        c.input_tokens + c.output_tokens + c.thinking_tokens AS tokens,
        c.gpu_seconds,
        c.usd
    FROM call_groups AS c
    LEFT JOIN judge_run AS r ON r.id = c.run_id
    LEFT JOIN run_status AS s ON s.run_id = r.id
    WHERE c.purpose = 'eval'
)
SELECT
    CASE WHEN grouping(judge) = 1 THEN 'All' ELSE judge END AS judge,
    CASE WHEN grouping(judge) = 1 THEN 'every protocol' ELSE protocol END AS protocol,
    coalesce(bool_or(main), false) AS main,
    count(DISTINCT run_id) AS passes,
    CAST(sum(calls) AS BIGINT) AS calls,
    sum(tokens) AS tokens,
    sum(gpu_seconds) / 3600.0 AS gpu_hours,
    sum(usd) AS spend,
    CASE WHEN grouping(judge) = 1 THEN NULL ELSE sum(usd) / nullif(count(DISTINCT run_id), 0) END AS spend_per_pass
FROM calls
GROUP BY GROUPING SETS ((judge, protocol), ())
