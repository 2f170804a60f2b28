-- The ranking of `dlqf rank` (vision profile): failures per normalised signature, largest first.
-- Standard SQL over the raw columns of table dlq, so it runs unchanged on dlqf query, DuckDB
-- and Spark SQL. The trim set is a space and a TAB character: plain trim() removes only spaces.
-- Rows dlqf rank rejects (missing fields, unreadable timestamps) are counted here too.
SELECT
  lower(trim(BOTH ' 	' FROM stage)) AS stage,
  lower(trim(BOTH ' 	' FROM reject_reason)) AS reject_reason,
  trim(BOTH ' 	' FROM registry_revision) AS registry_revision,
  count(*) AS count
FROM dlq
GROUP BY 1, 2, 3
ORDER BY count DESC, stage, reject_reason, registry_revision
