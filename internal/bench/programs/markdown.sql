-- Titles, ids and projects hold no backticks or line breaks here, so the header
-- needs no fence sizing; wc writes a UTC time as whycodes does, +00:00 for Z.
WITH
msg AS (
  SELECT seq, json ->> '$.role' AS role, json_type(json, '$.content') AS ct,
         json ->> '$.content' AS body, coalesce(json ->> '$.is_error', 0) AS err, json
  FROM messages WHERE session_id = 'SESSION_ID'),
piece(seq, k, info, body, raw) AS (
  SELECT seq, -1, NULL, NULL, '### ' || CASE role WHEN 'user' THEN 'User' WHEN 'assistant' THEN 'Assistant'
      WHEN 'system' THEN 'System' WHEN 'tool' THEN 'Tool' ELSE role END || char(10, 10) FROM msg
  UNION ALL
  SELECT seq, 0, CASE WHEN role = 'tool' THEN CASE WHEN err THEN 'error' ELSE 'result' END END, body, NULL
  FROM msg WHERE ct = 'text'
  UNION ALL
  SELECT msg.seq, b.key,
         CASE WHEN msg.role = 'tool' AND b.value ->> 'type' = 'text' THEN CASE WHEN msg.err THEN 'error' ELSE 'result' END
              WHEN b.value ->> 'type' = 'tooluse' THEN 'tool'
              WHEN b.value ->> 'type' = 'thinking' THEN 'thinking'
              WHEN b.value ->> 'type' = 'toolresult' THEN CASE WHEN b.value ->> 'is_error' THEN 'error' ELSE 'result' END END,
         CASE WHEN b.value ->> 'type' IN ('text', 'thinking') THEN b.value ->> 'text'
              WHEN b.value ->> 'type' = 'toolresult' THEN b.value ->> 'content'
              WHEN b.value ->> 'type' = 'tooluse' THEN (b.value ->> 'name') || char(10) ||
                   coalesce('{' || char(10) || (SELECT group_concat('  ' || json_quote(i.key) || ': ' ||
                       CASE WHEN i.type = 'text' THEN json_quote(i.value) ELSE i.value END, ',' || char(10))
                     FROM json_each(b.value, '$.input') i) || char(10) || '}', '{}') END,
         CASE WHEN b.value ->> 'type' = 'image' THEN '*[image]*' || char(10, 10)
              WHEN b.value ->> 'type' = 'redacted_thinking' THEN '*[redacted thinking]*' || char(10, 10) END
  FROM msg, json_each(msg.json, '$.content') b WHERE msg.ct = 'array'),
-- A text that opens a code fence and never closes it gets it closed, as wc
-- does: its lines are walked one by one, keeping the fence left open. A
-- recursive step may not use a subquery, so @L@ (the line), @T@ (it without
-- leading spaces) and @N@ (the run of its first character) are expanded below.
scan(seq, k, rest, open) AS (
  SELECT seq, k, body || char(10), '' FROM piece
  WHERE info IS NULL AND raw IS NULL AND (instr(body, '```') OR instr(body, '~~~'))
  UNION ALL
  SELECT seq, k, substr(rest, instr(rest, char(10)) + 1), CASE
      WHEN length(@L@) - length(@T@) > 3 OR @N@ < 3 OR substr(@T@, 1, 1) NOT IN ('`', '~') THEN open
      WHEN open = '' THEN CASE WHEN substr(@T@, 1, 1) = '`' AND instr(substr(@T@, @N@ + 1), '`') THEN open
                               ELSE substr(@T@, 1, @N@) END
      WHEN substr(@T@, 1, 1) = substr(open, 1, 1) AND @N@ >= length(open)
           AND trim(substr(@T@, @N@ + 1), ' ' || char(9, 10, 11, 12, 13)) = '' THEN ''
      ELSE open END
  FROM scan WHERE rest <> ''),
closing(seq, k, open) AS (SELECT seq, k, open FROM scan WHERE rest = '' AND open <> '')
SELECT '# ' || title || char(10, 10) || '- **Session:** `' || id || '`' || char(10) || '- **Project:** `' || project
       || '`' || char(10) || '- **Created:** ' || replace(created, 'Z', '+00:00') || char(10, 10) || '---' || char(10, 10)
FROM sessions WHERE id = 'SESSION_ID'
UNION ALL
SELECT * FROM (SELECT CASE
  WHEN info IS NULL AND raw IS NULL AND body IS NOT NULL THEN body || coalesce(CASE WHEN body LIKE '%' || char(10)
       THEN '' ELSE char(10) END || (SELECT open FROM closing c WHERE c.seq = piece.seq AND c.k = piece.k), '')
       || char(10, 10)
  WHEN info IS NULL THEN raw
  ELSE (SELECT f || info || char(10) || body || char(10) || f || char(10, 10) FROM (SELECT CASE
      WHEN instr(body, '``````') THEN '```````' WHEN instr(body, '`````') THEN '``````'
      WHEN instr(body, '````') THEN '`````' WHEN instr(body, '```') THEN '````' ELSE '```' END AS f)) END
FROM piece ORDER BY seq, k);
