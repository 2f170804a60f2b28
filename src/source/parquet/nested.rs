//! Paths into nested Parquet columns: struct fields, list elements, and headers by name in the
//! shapes writers give them (a map is a list of `key`/`value` structs; the S3 sink's header
//! files hold `list<struct<key, value>>`). Read row by row: nested columns are seldom large.

use polars::prelude::{AnyValue, DataType, PlSmallStr, PolarsResult, Series};

use crate::path::Step;

/// The column one step below `series`, or None where the step leads nowhere in its type.
pub(super) fn step_into(series: &Series, step: &Step) -> PolarsResult<Option<Series>> {
    match (series.dtype(), step) {
        (DataType::Struct(_), Step::Key(name)) => Ok(series.struct_()?.field_by_name(name).ok()),
        (DataType::List(_), _) => {
            let list = series.list()?;
            let mut values: Vec<AnyValue<'static>> = Vec::with_capacity(series.len());
            for i in 0..series.len() {
                values.push(match list.get_as_series(i) {
                    Some(items) => element(&items, step)?.unwrap_or(AnyValue::Null),
                    None => AnyValue::Null,
                });
            }
            Ok(Some(Series::from_any_values(PlSmallStr::from(step_name(step)), &values, false)?))
        }
        _ => Ok(None),
    }
}

fn step_name(step: &Step) -> String {
    match step {
        Step::Key(name) => name.clone(),
        Step::Index(i) => i.to_string(),
    }
}

/// One row's list: its element at an index, or the value of the last header of a name.
fn element(items: &Series, step: &Step) -> PolarsResult<Option<AnyValue<'static>>> {
    let name = match step {
        Step::Index(i) => return Ok((*i < items.len()).then(|| items.get(*i)).transpose()?.map(AnyValue::into_static)),
        Step::Key(name) => name,
    };
    match items.dtype() {
        DataType::Struct(_) => {
            let fields = items.struct_()?;
            let (Some(keys), Ok(values)) = (fields.field_by_name("key").or_else(|_| fields.field_by_name("name")).ok(), fields.field_by_name("value")) else {
                return Ok(None);
            };
            let keys = keys.cast(&DataType::String)?;
            let keys = keys.str()?;
            let found = (0..keys.len()).rev().find(|&j| keys.get(j) == Some(name.as_str()));
            Ok(found.map(|j| values.get(j)).transpose()?.map(AnyValue::into_static))
        }
        DataType::String => {
            let texts = items.str()?;
            let found = (0..texts.len()).step_by(2).rev().find(|&j| texts.get(j) == Some(name.as_str()));
            Ok(found.and_then(|j| texts.get(j + 1)).map(|v| AnyValue::StringOwned(v.into())))
        }
        _ => Ok(None),
    }
}
