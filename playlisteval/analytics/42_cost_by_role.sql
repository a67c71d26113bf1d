-- Cost by role (SPEC block) and purpose (build / eval / index): calls, failed calls, cache hits,
-- tokens, GPU-hours, spend, and share of that purpose's spend. The ledger is read as its sums (call_groups:
-- store/call_groups.py): a group counts its calls.
WITH calls AS (
    SELECT
        purpose,
        role,
        status,
        cache_hit,
        calls,
        input_tokens + output_tokens + thinking_tokens AS tokens,
        gpu_seconds,
        usd
    FROM call_groups
)
SELECT
    purpose,
    role,
    CAST(sum(calls) AS BIGINT) AS calls,
    CAST(coalesce(sum(calls) FILTER (WHERE status IN ('error', 'malformed', 'interrupted')), 0) AS BIGINT) AS failed,
    CAST(coalesce(sum(calls) FILTER (WHERE cache_hit), 0) AS BIGINT) AS cache_hits,
    sum(tokens) AS tokens,
    sum(gpu_seconds) / 3600.0 AS gpu_hours,
    sum(usd) AS spend,
    sum(usd) / nullif(sum(sum(usd)) OVER (PARTITION BY purpose), 0) AS share
FROM calls
GROUP BY purpose, role
