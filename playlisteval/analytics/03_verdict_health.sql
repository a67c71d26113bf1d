-- Verdict health (issue 40): how each judge run's replies ended, so that a judge that never answers is
-- never read as a 50 % judge (no verdict scores 0.5, SPEC G4). Per run, over its judged pairs: no_verdict
-- (no [[A]] / [[B]]: scored 0.5) and, of them, refusals (the provider refused) and ties (a reward model
-- scored both answers the same); of the verdicts, verdicts_a / verdicts_b and the commoner letter's
-- share (one_letter_share: 'all A' / 'all B'), with letter_better the pairs whose better answer really
-- sits on that letter (the benchmark's side draw). Counts and shares (NULL with nothing to divide).
-- flagged: no_verdict_share over [analytics] max_no_verdict_share, or one_letter_share over
-- max_one_letter_share; health says why ('unhealthy: 44/44 no verdict (over 20 %)'), '' when neither;
-- verdicts is the mix in a few words for tables ('2/44 no verdict (1 refusal) · A 52 %').
WITH counted AS (
    SELECT
        run_id,
        count(*) AS judged,
        count(*) FILTER (WHERE verdict IS NULL OR verdict NOT IN ('A', 'B')) AS no_verdict,
        count(*) FILTER (WHERE (verdict IS NULL OR verdict NOT IN ('A', 'B')) AND outcome = 'refusal') AS refusals,
        count(*) FILTER (WHERE (verdict IS NULL OR verdict NOT IN ('A', 'B')) AND outcome = 'tie') AS ties,
        count(*) FILTER (WHERE verdict = 'A') AS verdicts_a,
        count(*) FILTER (WHERE verdict = 'B') AS verdicts_b,
        count(*) FILTER (WHERE verdict IN ('A', 'B') AND a_is_better) AS a_better
    FROM judgment
    GROUP BY run_id
),
runs AS (
    SELECT
        r.id AS run_id,
        coalesce(c.judged, 0) AS judged,
        coalesce(c.no_verdict, 0) AS no_verdict,
        coalesce(c.refusals, 0) AS refusals,
        coalesce(c.ties, 0) AS ties,
        coalesce(c.verdicts_a, 0) AS verdicts_a,
        coalesce(c.verdicts_b, 0) AS verdicts_b,
        coalesce(c.a_better, 0) AS a_better
    FROM judge_run AS r
    LEFT JOIN counted AS c ON c.run_id = r.id
),
shares AS (
    SELECT
        *,
        verdicts_a + verdicts_b AS verdicts,
        CASE WHEN verdicts_a + verdicts_b = 0 THEN NULL WHEN verdicts_a >= verdicts_b THEN 'A' ELSE 'B' END
            AS letter,
        greatest(verdicts_a, verdicts_b) AS letter_count,
        CASE WHEN verdicts_a >= verdicts_b THEN a_better ELSE verdicts_a + verdicts_b - a_better END AS letter_better,
        no_verdict / nullif(judged, 0) AS no_verdict_share,
        refusals / nullif(judged, 0) AS refusal_share,
        ties / nullif(judged, 0) AS tie_share,
        verdicts_a / nullif(verdicts_a + verdicts_b, 0) AS a_share,
        greatest(verdicts_a, verdicts_b) / nullif(verdicts_a + verdicts_b, 0) AS one_letter_share
    FROM runs
),
flags AS (
    SELECT
        s.* EXCLUDE (a_better),
        coalesce(s.no_verdict_share > p.max_no_verdict_share, false) AS no_verdict_flagged,
        coalesce(s.one_letter_share > p.max_one_letter_share, false) AS one_letter_flagged,
        p.max_no_verdict_share,
        p.max_one_letter_share
    FROM shares AS s
    CROSS JOIN analytics_param AS p
),
-- "2 refusals, 1 tie": what the no verdicts were, when the store can tell
kinds AS (
    SELECT
        *,
        concat_ws(', ',
            CASE WHEN refusals > 0 THEN refusals || ' refusal' || CASE WHEN refusals = 1 THEN '' ELSE 's' END END,
            CASE WHEN ties > 0 THEN ties || ' tie' || CASE WHEN ties = 1 THEN '' ELSE 's' END END) AS no_verdict_kinds
    FROM flags
)
SELECT
    * EXCLUDE (no_verdict_kinds),
    no_verdict_flagged OR one_letter_flagged AS flagged,
    CASE WHEN no_verdict_flagged OR one_letter_flagged THEN 'unhealthy: ' || concat_ws('; ',
        CASE WHEN no_verdict_flagged THEN no_verdict || '/' || judged || ' no verdict'
            || CASE WHEN no_verdict_kinds <> '' THEN ' (' || no_verdict_kinds || ')' ELSE '' END
            || ' (over ' || printf('%g', 100 * max_no_verdict_share) || ' %)' END,
        CASE WHEN one_letter_flagged THEN letter_count || '/' || verdicts || ' verdicts ' || letter
            || ' (over ' || printf('%g', 100 * max_one_letter_share) || ' %; the better answer is ' || letter
            || ' in ' || letter_better || ')' END)
    ELSE '' END AS health,
    CASE WHEN judged = 0 THEN '' ELSE concat_ws(' · ',
        no_verdict || '/' || judged || ' no verdict'
            || CASE WHEN no_verdict_kinds <> '' THEN ' (' || no_verdict_kinds || ')' ELSE '' END,
        CASE WHEN verdicts > 0 THEN 'A ' || round(100 * a_share) :: INTEGER || ' %' END) END AS verdicts_mix
FROM kinds
