-- Gate funnel of the build (SPEC C-D): for each gate, how many attempts it decided (seen), passed and
-- rejected, and its checker faults: replies of the gate's own model that stayed unusable, which decide
-- nothing (the step is tried again, issue 9), so they are counted apart and not in seen.
-- Portable SQL: runs on the store itself (SQLite, PostgreSQL) and in DuckDB over its tables.
SELECT gate,
       SUM(CASE WHEN verdict IN ('pass', 'reject') THEN 1 ELSE 0 END) AS seen,
       SUM(CASE WHEN verdict = 'pass' THEN 1 ELSE 0 END) AS passed,
       SUM(CASE WHEN verdict = 'reject' THEN 1 ELSE 0 END) AS rejected,
       SUM(CASE WHEN verdict = 'fault' THEN 1 ELSE 0 END) AS checker_faults
FROM gate_result
GROUP BY gate
