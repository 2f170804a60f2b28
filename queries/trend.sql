-- The daily trend of `dlqf trend --every day` (vision profile): failures per normalised
-- signature per UTC day, causes in rank order (total descending, then signature), days ascending.
-- Standard SQL over the raw columns of table dlq: runs unchanged on dlqf query, DuckDB and Spark
-- SQL. Timestamps are RFC 3339 text (offset Z, ±HH:MM, ±HHMM, ±HH or none); the UTC day is computed
-- from the text itself (local date, moved a day when the offset crosses midnight), so no
-- engine's time-zone setting matters.
WITH parsed AS (
  SELECT
    lower(trim(BOTH ' 	' FROM stage)) AS stage,
    lower(trim(BOTH ' 	' FROM reject_reason)) AS reject_reason,
    trim(BOTH ' 	' FROM registry_revision) AS registry_revision,
    trim(BOTH ' 	' FROM capture_timestamp) AS ts
  FROM dlq
),
shifted AS (
  SELECT
    stage, reject_reason, registry_revision,
    CAST(substr(ts, 1, 10) AS DATE) AS local_day,
    CAST(substr(ts, 12, 2) AS INTEGER) * 60 + CAST(substr(ts, 15, 2) AS INTEGER) AS local_minute,
    -- The offset's sign stands 6th from the end in ±HH:MM, 5th in ±HHMM, 3rd in ±HH.
    CASE
      WHEN substr(ts, length(ts) - 5, 1) = '+' OR substr(ts, length(ts) - 4, 1) = '+' OR substr(ts, length(ts) - 2, 1) = '+' THEN 1
      WHEN substr(ts, length(ts) - 5, 1) = '-' OR substr(ts, length(ts) - 4, 1) = '-' OR substr(ts, length(ts) - 2, 1) = '-' THEN -1
      ELSE 0
    END AS offset_sign,
    CAST(CASE
      WHEN substr(ts, length(ts) - 5, 1) IN ('+', '-') THEN substr(ts, length(ts) - 4, 2)
      WHEN substr(ts, length(ts) - 4, 1) IN ('+', '-') THEN substr(ts, length(ts) - 3, 2)
      WHEN substr(ts, length(ts) - 2, 1) IN ('+', '-') THEN substr(ts, length(ts) - 1, 2)
      ELSE '0'
    END AS INTEGER) * 60
      + CAST(CASE
          WHEN substr(ts, length(ts) - 5, 1) IN ('+', '-') OR substr(ts, length(ts) - 4, 1) IN ('+', '-') THEN substr(ts, length(ts) - 1, 2)
          ELSE '0'
        END AS INTEGER)
      AS offset_minutes
  FROM parsed
),
utc AS (
  SELECT stage, reject_reason, registry_revision, local_day, local_minute - offset_sign * offset_minutes AS utc_minute
  FROM shifted
),
daily AS (
  SELECT
    stage, reject_reason, registry_revision,
    CAST(CAST(CASE
      WHEN utc_minute < 0 THEN local_day - INTERVAL '1 day'
      WHEN utc_minute >= 1440 THEN local_day + INTERVAL '1 day'
      ELSE local_day
    END AS DATE) AS VARCHAR(10)) AS day
  FROM utc
),
counted AS (
  SELECT stage, reject_reason, registry_revision, day, count(*) AS count
  FROM daily
  GROUP BY stage, reject_reason, registry_revision, day
)
SELECT stage, reject_reason, registry_revision, day, count,
  sum(count) OVER (PARTITION BY stage, reject_reason, registry_revision) AS total
FROM counted
ORDER BY total DESC, stage, reject_reason, registry_revision, day
