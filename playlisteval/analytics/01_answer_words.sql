-- Every answer with its length in words (SPEC F4), counted as a judge reads it: citations such as
-- "(clip1 @ 0:30 - 1:10)" or "[clip 2 @ 4:00 - 4:40]" removed with the space before them, and a
-- space left before punctuation closed up (SPEC G4, as gates/citations.strip_citations does), then
-- runs of non-space characters counted ("seen (clip1 @ 0:30 - 1:10)." reads "seen.").
SELECT
    a.id AS answer_id,
    a.set_id,
    a.rating,
    CASE WHEN trim(t.plain) = '' THEN 0 ELSE len(string_split_regex(trim(t.plain), '\s+')) END AS words
FROM answer AS a,
     LATERAL (
         SELECT regexp_replace(
             regexp_replace(a.text, '\s*[(\[][^()\[\]]*@[^()\[\]]*[)\]]', '', 'g'),
             '[ \t]+([.,;:!?])', '\1', 'g'
         ) AS plain
     ) AS t
