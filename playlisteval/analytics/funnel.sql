-- Gate funnel of the build (SPEC C-D): for each gate, how many attempts it saw, passed and rejected.
-- Portable SQL: runs on the store itself (SQLite, PostgreSQL) and in DuckDB over its tables.
SELECT gate,
       COUNT(*) AS seen,
       SUM(CASE WHEN verdict = 'pass' THEN 1 ELSE 0 END) AS passed,
       SUM(CASE WHEN verdict = 'reject' THEN 1 ELSE 0 END) AS rejected
FROM gate_result
GROUP BY gate
