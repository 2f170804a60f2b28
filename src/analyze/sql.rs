//! SQL over the loaded records: every input's raw columns become table `dlq`, queried with
//! polars' SQL engine, so the analyses in `queries/` also run unchanged on DuckDB or Spark.

use anyhow::{Context, Result};
use polars::prelude::{Column, DataFrame, DataType, Engine, IntoLazy, LazyFileListReader, LazyFrame, LazyJsonLineReader, PlRefPath, ScanArgsParquet};
use polars::sql::SQLContext;

use crate::source::RawTable;

/// Runs `sql` with the raw records as table `dlq` (columns as in the dumps; inputs with
/// different columns are aligned by name, missing ones null), on polars' streaming engine.
/// A panic inside polars (on bytes its checks let through) is an error, never a crash.
pub fn query(table: &RawTable, sql: &str) -> Result<DataFrame> {
    crate::contain::contained(|| run(table, sql)).unwrap_or_else(|panic| Err(anyhow::anyhow!("polars failed on the inputs or the query ({panic})")))
}

fn run(table: &RawTable, sql: &str) -> Result<DataFrame> {
    let path = |p: &std::path::Path| PlRefPath::new(p.to_string_lossy().as_ref());
    let mut frames = Vec::new();
    if let Some(ndjson) = &table.ndjson {
        // A file:// URL makes polars stream the file in bounded chunks; a plain path would be
        // memory-mapped, and every page it reads would stay resident until the end.
        let absolute = std::path::absolute(ndjson.file.path()).context("the temporary folder")?;
        let url = PlRefPath::new(format!("file://{}", absolute.display()).as_str());
        frames.push(LazyJsonLineReader::new(url).with_schema(Some(ndjson.schema.clone())).finish().context("reading the JSON-lines inputs")?);
    }
    if let Some(columns) = &table.columns {
        frames.push(columns.clone().lazy());
    }
    for file in &table.parquet {
        frames.push(LazyFrame::scan_parquet(path(file.path()), ScanArgsParquet::default()).with_context(|| format!("{}: cannot read", file.path().display()))?);
    }
    let table = match frames.len() {
        0 => anyhow::bail!("no inputs to query"),
        1 => frames.pop().expect("one frame"),
        // Frames of several formats are stacked into one: polars 0.55 fails on a bare
        // count(*) over a union plan.
        _ => stack(frames.into_iter().map(|f| f.collect()).collect::<Result<Vec<_>, _>>()?)?.lazy(),
    };
    // Standard SQL's `CAST(text AS DATE)` is how portable queries read dates; polars warns that
    // its own API prefers `str.to_date`, which is no concern of a SQL user.
    polars::error::set_warning_function(|_, _| {});
    let mut context = SQLContext::new();
    context.register("dlq", table);
    Ok(context.execute(sql).context("SQL")?.collect_with_engine(Engine::Streaming).context("SQL")?.unwrap_single())
}

/// Stacks frames by column name: a column missing from a frame is null there, and a column
/// whose type differs is cast to the type it has in the first frame that holds it.
fn stack(frames: Vec<DataFrame>) -> Result<DataFrame> {
    let mut fields: Vec<(String, DataType)> = Vec::new();
    for df in &frames {
        for column in df.columns() {
            if !fields.iter().any(|(n, _)| n == column.name().as_str()) {
                fields.push((column.name().to_string(), column.dtype().clone()));
            }
        }
    }
    let mut stacked: Option<DataFrame> = None;
    for df in frames {
        let height = df.height();
        let columns = fields
            .iter()
            .map(|(name, dtype)| match df.column(name) {
                Ok(c) => c.cast(dtype).with_context(|| format!("column `{name}` has different types in different inputs")),
                Err(_) => Ok(Column::full_null(name.as_str().into(), height, dtype)),
            })
            .collect::<Result<Vec<_>>>()?;
        let aligned = DataFrame::new(height, columns)?;
        match &mut stacked {
            None => stacked = Some(aligned),
            Some(acc) => {
                acc.vstack_mut(&aligned)?;
            }
        }
    }
    Ok(stacked.expect("at least two frames"))
}

/// The names a query may read columns by, when its every select list names what it reads (no
/// `*`, `t.*` or `COLUMNS(…)`): each identifier, and each part of a dotted one (`d.stage`,
/// `headers.key`). None when the query does not parse here, or selects a wildcard.
pub fn named_columns(sql: &str) -> Option<Vec<String>> {
    use sqlparser::ast::{Expr, Query, SelectItem, SetExpr, Visit, Visitor};
    use std::ops::ControlFlow;

    struct Names(Vec<String>);
    impl Visitor for Names {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            fn selects_wildcard(body: &SetExpr) -> bool {
                match body {
                    SetExpr::Select(select) => select.projection.iter().any(|item| matches!(item, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..))),
                    SetExpr::SetOperation { left, right, .. } => selects_wildcard(left) || selects_wildcard(right),
                    _ => false,
                }
            }
            if selects_wildcard(&query.body) { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        }
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            match expr {
                Expr::Identifier(ident) => self.0.push(ident.value.clone()),
                Expr::CompoundIdentifier(parts) => self.0.extend(parts.iter().map(|p| p.value.clone())),
                Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("columns") => return ControlFlow::Break(()),
                Expr::Wildcard(_) | Expr::QualifiedWildcard(..) => return ControlFlow::Break(()),
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let options = sqlparser::parser::ParserOptions { trailing_commas: true, ..Default::default() };
    let statements = sqlparser::parser::Parser::new(&sqlparser::dialect::GenericDialect).with_options(options).try_with_sql(sql).ok()?.parse_statements().ok()?;
    let mut names = Names(Vec::new());
    if statements.visit(&mut names).is_break() {
        return None;
    }
    let mut names = names.0;
    names.sort();
    names.dedup();
    Some(names)
}

