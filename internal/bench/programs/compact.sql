PRAGMA synchronous=@SYNC@;
BEGIN;
UPDATE messages SET json = json_set(json, '$.content',
    substr(json ->> '$.content', 1, 32768) || char(10, 10) || '[... ' || (length(json ->> '$.content') - 32768)
    || ' characters truncated for context management]')
  WHERE json ->> '$.role' = 'tool' AND json_type(json, '$.content') = 'text'
    AND length(json ->> '$.content') > 32768 + length('xx[...  characters truncated for context management]' || (length(json ->> '$.content') - 32768));
WITH tools AS (
  SELECT rowid AS r, row_number() OVER (PARTITION BY session_id ORDER BY seq DESC) AS newest
  FROM messages WHERE json ->> '$.role' = 'tool')
UPDATE messages SET json = json_set(json, '$.content',
    substr(json ->> '$.content', 1, 2048) || char(10, 10) || '[... ' || (length(json ->> '$.content') - 2048)
    || ' characters truncated for context management]')
  WHERE rowid IN (SELECT r FROM tools WHERE newest > 4)
    AND json_type(json, '$.content') = 'text'
    AND length(json ->> '$.content') > 2048 + length('xx[...  characters truncated for context management]' || (length(json ->> '$.content') - 2048));
COMMIT;
