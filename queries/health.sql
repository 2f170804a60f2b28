-- The numbers of `dlqf health` (vision profile): failures per UTC day, and the depth (every
-- failure read) on each row. Days without failures have no row; growth per day is the mean of
-- the last 7 days' counts, empty days counting 0. Standard SQL over the raw columns of table dlq:
-- runs unchanged on dlqf query, DuckDB and Spark SQL. The UTC day is computed from the RFC 3339
-- text itself (local date, minus the offset when that crosses midnight), as in trend.sql.
WITH parsed AS (
  SELECT
    trim(BOTH ' 	' FROM capture_timestamp) AS ts
  FROM dlq
),
shifted AS (
  SELECT
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
  SELECT local_day, local_minute - offset_sign * offset_minutes AS utc_minute
  FROM shifted
),
daily AS (
  SELECT
    CAST(CAST(CASE
      WHEN utc_minute < 0 THEN local_day - INTERVAL '1 day'
      WHEN utc_minute >= 1440 THEN local_day + INTERVAL '1 day'
      ELSE local_day
    END AS DATE) AS VARCHAR(10)) AS day
  FROM utc
),
counted AS (
  SELECT day, count(*) AS count
  FROM daily
  GROUP BY day
)
SELECT day, count, sum(count) OVER () AS depth
FROM counted
ORDER BY day
