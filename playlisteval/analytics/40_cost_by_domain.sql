-- Build cost by domain (SPEC K2, paper Table 19): every build call of the ledger charged to its item's
-- domain (retries and rejected candidates included), the build runs (see item_facts), the accepted
-- questions, the spend, pooled = spend / accepted questions, and the mean ± sample sd and range over
-- the domain's runs of each run's spend / accepted questions (runs with no accepted question have no
-- per-question cost and are left out of those four, not out of the spend). 'All' pools every domain.
-- The ledger is read as its sums (call_groups: store/call_groups.py).
WITH spend AS (
    SELECT item_id, sum(usd) AS usd
    FROM call_groups
    WHERE purpose = 'build' AND item_id IS NOT NULL
    GROUP BY item_id
),
runs AS (
    SELECT
        f.domain,
        f.build_run,
        coalesce(sum(s.usd), 0.0) AS spend,
        count(*) FILTER (WHERE f.accepted) AS accepted
    FROM item_facts AS f
    LEFT JOIN spend AS s ON s.item_id = f.item_id
    GROUP BY f.domain, f.build_run
),
per_run AS (
    SELECT *, CASE WHEN accepted > 0 THEN spend / accepted END AS per_question FROM runs
)
SELECT
    CASE WHEN grouping(domain) = 1 THEN 'All' ELSE domain END AS domain,
    count(*) AS runs,
    sum(accepted) AS questions,
    sum(spend) AS spend,
    sum(spend) / nullif(sum(accepted), 0) AS pooled,
    avg(per_question) AS mean,
    stddev_samp(per_question) AS sd,
    min(per_question) AS min,
    max(per_question) AS max
FROM per_run
GROUP BY GROUPING SETS ((domain), ())
