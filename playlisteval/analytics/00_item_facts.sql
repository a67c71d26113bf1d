-- One row per item: its domain, its playlist and its build run, and whether it was accepted.
-- Accepted (SPEC F1, K2) means the build finished it: accepted, or later selected or found too easy.
-- A build run (SPEC K2; the paper's Table 19 "runs") has no table of its own: playlists are added and
-- built one at a time (SPEC A1), so an item's run is the playlist of its seed's first segment.
SELECT
    i.id AS item_id,
    i.state,
    i.state IN ('accepted', 'selected', 'too_easy') AS accepted,
    s.domain_id,
    d.name AS domain,
    v.playlist_id,
    p.name AS playlist,
    v.playlist_id AS build_run
FROM item AS i
JOIN seed AS s ON s.id = i.seed_id
JOIN domain AS d ON d.id = s.domain_id
LEFT JOIN segment AS g ON g.id = s.segment1_id
LEFT JOIN video AS v ON v.id = g.video_id
LEFT JOIN playlist AS p ON p.id = v.playlist_id
