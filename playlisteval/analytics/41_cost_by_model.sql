-- Build cost by model (SPEC K3, paper Table 20): the ledger's build calls per "provider/model", with
-- the roles each played, tokens (input + output + thinking), GPU-hours, spend, share of the build's
-- spend, and spend per accepted question (over all accepted questions). 'All' is the whole build. The
-- ledger is read as its sums (call_groups: store/call_groups.py): a group counts its calls.
WITH calls AS (
    SELECT
        provider || '/' || model AS model,
        role,
        calls,
        input_tokens + output_tokens + thinking_tokens AS tokens,
        gpu_seconds,
        usd,
        cache_hit
    FROM call_groups
    WHERE purpose = 'build'
),
totals AS (
    SELECT
        (SELECT sum(usd) FROM calls) AS spend,
        (SELECT count(*) FROM item_facts WHERE accepted) AS accepted
)
SELECT
    CASE WHEN grouping(c.model) = 1 THEN 'All' ELSE c.model END AS model,
    string_agg(DISTINCT c.role, ', ' ORDER BY c.role) AS roles,
    CAST(sum(c.calls) AS BIGINT) AS calls,
    CAST(coalesce(sum(c.calls) FILTER (WHERE c.cache_hit), 0) AS BIGINT) AS cache_hits,
    sum(c.tokens) AS tokens,
    sum(c.gpu_seconds) / 3600.0 AS gpu_hours,
    sum(c.usd) AS spend,
    sum(c.usd) / nullif(max(t.spend), 0) AS share,
    sum(c.usd) / nullif(max(t.accepted), 0) AS per_question
FROM calls AS c
CROSS JOIN totals AS t
GROUP BY GROUPING SETS ((c.model), ())
