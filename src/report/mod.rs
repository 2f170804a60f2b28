//! Renders analysis results for people (table, markdown) and machines (json, csv, parquet).
//! Every renderer returns bytes; storage writes them to stdout, a file or S3.

pub mod columns;
pub mod csv;
pub mod explain;
pub mod html;
pub mod json;
pub mod markdown;
pub mod parquet;
pub mod returned;
pub mod review;
pub mod sparkline;
pub mod table;


#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Table,
    Json,
    Csv,
    Markdown,
    Parquet,
    Html,
    /// A partial state (`dlqf.state/1`) to merge later, not a report.
    State,
}

impl OutputFormat {
    pub const NAMES: &'static [&'static str] = &["table", "json", "csv", "markdown", "parquet", "html", "state"];
    pub const ALL: [OutputFormat; 7] = [
        OutputFormat::Table,
        OutputFormat::Json,
        OutputFormat::Csv,
        OutputFormat::Markdown,
        OutputFormat::Parquet,
        OutputFormat::Html,
        OutputFormat::State,
    ];

    pub fn from_name(name: &str) -> Option<OutputFormat> {
        Some(match name {
            "table" => OutputFormat::Table,
            "json" => OutputFormat::Json,
            "csv" => OutputFormat::Csv,
            "markdown" | "md" => OutputFormat::Markdown,
            "parquet" => OutputFormat::Parquet,
            "html" => OutputFormat::Html,
            "state" => OutputFormat::State,
            _ => return None,
        })
    }

    /// The format a file name implies (`report.json`, `report.md`, …), if any.
    pub fn from_name_of(file_name: &str) -> Option<OutputFormat> {
        match file_name.rsplit_once('.')?.1.to_ascii_lowercase().as_str() {
            "json" => Some(OutputFormat::Json),
            "csv" => Some(OutputFormat::Csv),
            "md" | "markdown" => Some(OutputFormat::Markdown),
            "parquet" => Some(OutputFormat::Parquet),
            "txt" => Some(OutputFormat::Table),
            "html" | "htm" => Some(OutputFormat::Html),
            "state" => Some(OutputFormat::State),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Table => "table",
            OutputFormat::Json => "json",
            OutputFormat::Csv => "csv",
            OutputFormat::Markdown => "markdown",
            OutputFormat::Parquet => "parquet",
            OutputFormat::Html => "html",
            OutputFormat::State => "state",
        }
    }

    pub fn is_binary(self) -> bool {
        self == OutputFormat::Parquet
    }
}

/// The one-line summary of a diff: totals and how many causes are new, gone or in both.
pub fn diff_counts(report: &crate::analyze::diff::DiffReport) -> String {
    format!(
        "failures {} → {} ({}); {} new, {} gone, {} in both",
        report.total_old,
        report.total_new,
        table::signed(report.total_new as i64 - report.total_old as i64),
        report.new.len(),
        report.gone.len(),
        report.changed.len()
    )
}

/// The one-line summary of a health report after its status.
pub fn health_summary(report: &crate::analyze::health::HealthReport) -> String {
    format!(
        "depth {} (warning at {}, critical at {}); growth {} per day over the last {} days; {} rejected rows",
        report.depth,
        report.warn,
        report.critical,
        report.growth_per_day,
        report.window_days.min(report.per_day.len()),
        report.rejected
    )
}

/// The sentence naming critical topics of a health report, if any.
pub fn critical_topics(report: &crate::analyze::health::HealthReport) -> Option<String> {
    use crate::analyze::health::Status;
    let critical: Vec<String> =
        report.topics.iter().flatten().filter(|t| t.status == Status::Critical).map(|t| format!("{} (depth {})", t.topic, t.depth)).collect();
    (!critical.is_empty()).then(|| format!("critical {}: {}", report.by.as_deref().unwrap_or("topic"), critical.join(", ")))
}

/// Shares as percentages with two decimals, for people.
pub fn percent(share: f64) -> String {
    format!("{:.2}%", share * 100.0)
}
