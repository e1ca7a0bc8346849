-- Hours watched per genre in the second half of October; events without a known title count too.
SELECT t.genre, count(*) AS events, sum(e.hours) AS hours
FROM events e
LEFT JOIN titles t ON e.title_id = t.title_id
WHERE e.day >= DATE '2026-10-15'
GROUP BY t.genre
ORDER BY hours DESC
