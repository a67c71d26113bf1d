-- Cost by role (SPEC block) and purpose (build / eval / index): calls, failed calls, cache hits,
-- tokens, GPU-hours, spend, and share of that purpose's spend.
WITH calls AS (
    SELECT
        purpose,
        role,
        status,
        cache_hit,
        input_tokens + output_tokens + thinking_tokens AS tokens,
        gpu_seconds,
        usd
    FROM model_call
)
SELECT
    purpose,
    role,
    count(*) AS calls,
    count(*) FILTER (WHERE status IN ('error', 'malformed', 'interrupted')) AS failed,
    count(*) FILTER (WHERE cache_hit) AS cache_hits,
    sum(tokens) AS tokens,
    sum(gpu_seconds) / 3600.0 AS gpu_hours,
    sum(usd) AS spend,
    sum(usd) / nullif(sum(sum(usd)) OVER (PARTITION BY purpose), 0) AS share
FROM calls
GROUP BY purpose, role
