//! One self-contained HTML page for a postmortem: Pareto chart, trend lines of the top causes,
//! the ranked table. Charts are inline SVG drawn here; no script, no fetch, every dump string
//! escaped, and a Content-Security-Policy that would block a script even if one slipped in.

use std::fmt::Write;

use super::columns::RankColumn;
use super::percent;
use crate::analyze::rank::RankReport;
use crate::analyze::trend::TrendReport;

/// Bars in the Pareto chart; the rest is one "other" bar.
const PARETO_BARS: usize = 20;
/// Causes drawn in the trend chart.
const TREND_LINES: usize = 5;
const BAR_COLOR: &str = "#2f6db5";
const CUMULATIVE_COLOR: &str = "#d9480f";
const LINE_COLORS: [&str; TREND_LINES] = ["#2f6db5", "#d9480f", "#2b8a3e", "#862e9c", "#e8a200"];

const STYLE: &str = "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1200px;color:#1d2125;padding:0 1em}\
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:2em}\
.summary{color:#444}.alert{color:#c92a2a;font-weight:600}\
table{border-collapse:collapse;width:100%;font-size:12.5px}th,td{border-bottom:1px solid #dee2e6;padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:anywhere}\
th{background:#f1f3f5}td.n{text-align:right;font-variant-numeric:tabular-nums}td.sig{overflow-wrap:break-word;max-width:28em}td.t{white-space:nowrap}td.id{word-break:break-all}\
svg{display:block;margin:.5em 0}svg text{font:11px system-ui,sans-serif;fill:#495057}\
.legend span{display:inline-block;margin-right:1.2em}.swatch{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:-.1em}";

pub fn rank(report: &RankReport, trend: &TrendReport) -> Vec<u8> {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(out, "<title>DLQ failure report · {}</title>", escape(&report.profile));
    let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(out, "<h1>DLQ failure report</h1>");
    let _ = writeln!(
        out,
        "<p class=\"summary\">Profile <b>{}</b> · {} failures in {} causes · {} rejected rows{}</p>",
        escape(&report.profile),
        report.total,
        report.causes,
        report.rejected,
        match (trend.periods.first(), trend.periods.last()) {
            (Some(a), Some(b)) => {
                let cut = if trend.every.name() == "hour" { 16 } else { 10 };
                format!(" · {} {}s from {} to {}", trend.periods.len(), trend.every.name(), escape(&a[..cut]), escape(&b[..cut]))
            }
            _ => String::new(),
        }
    );
    if let Some(d) = &report.dominant {
        let class = if d.alert { "alert" } else { "summary" };
        let verdict = if d.alert { "one cause dominates: fix it before any replay" } else { "no single cause dominates" };
        let _ = writeln!(out, "<p class=\"{class}\">Top cause holds {} (alert at {}): {verdict}.</p>", percent(d.share), percent(d.alert_share));
    }
    if !report.buckets.is_empty() {
        out.push_str("<h2>Causes by count (Pareto)</h2>\n");
        pareto(&mut out, report);
    }
    if trend.periods.len() > 1 && !trend.series.is_empty() {
        let _ = writeln!(out, "<h2>Top causes per {}</h2>", trend.every.name());
        trend_lines(&mut out, report, trend);
    }
    if report.buckets.len() < report.causes {
        let _ = writeln!(out, "<h2>Ranked causes (the {} largest of {})</h2>", report.buckets.len(), report.causes);
    } else {
        out.push_str("<h2>Ranked causes</h2>\n");
    }
    table(&mut out, report);
    out.push_str("</body>\n</html>\n");
    out.into_bytes()
}

/// A cause's signature values as one line of text.
fn label(values: impl Iterator<Item = impl AsRef<str>>) -> String {
    values.map(|v| v.as_ref().to_string()).collect::<Vec<_>>().join(" · ")
}

fn pareto(out: &mut String, report: &RankReport) {
    let (width, height, left, right, top, bottom) = (960.0, 300.0, 56.0, 48.0, 12.0, 36.0);
    let mut bars: Vec<(String, String, u64)> = report
        .buckets
        .iter()
        .take(PARETO_BARS)
        .map(|b| (format!("#{}", b.rank), format!("#{} {} — {} ({})", b.rank, label(b.signature.values()), b.count, percent(b.share)), b.count))
        .collect();
    let listed: u64 = bars.iter().map(|b| b.2).sum();
    if report.total > listed {
        let rest = report.total - listed;
        bars.push(("other".into(), format!("{} other causes — {rest}", report.causes - bars.len()), rest));
    }
    let max = bars.iter().map(|b| b.2).max().unwrap_or(1).max(1) as f64;
    let plot_w = width - left - right;
    let plot_h = height - top - bottom;
    let slot = plot_w / bars.len() as f64;
    let _ = writeln!(out, "<svg id=\"pareto\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"Pareto chart of failure causes\">");
    axes(out, left, top, plot_w, plot_h, max);
    for i in 0..=4 {
        let y = top + plot_h * (1.0 - f64::from(i) / 4.0);
        let _ = writeln!(out, "<text x=\"{:.1}\" y=\"{:.1}\">{}%</text>", left + plot_w + 6.0, y + 4.0, i * 25);
    }
    let mut cumulative = 0u64;
    let mut points = Vec::new();
    for (i, (tick, title, count)) in bars.iter().enumerate() {
        let h = plot_h * *count as f64 / max;
        let x = left + slot * i as f64 + slot * 0.15;
        let _ = writeln!(
            out,
            "<rect class=\"bar\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{BAR_COLOR}\"><title>{}</title></rect>",
            top + plot_h - h,
            slot * 0.7,
            escape(title)
        );
        let _ = writeln!(out, "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>", x + slot * 0.35, top + plot_h + 16.0, escape(tick));
        cumulative += count;
        let share = if report.total == 0 { 0.0 } else { cumulative as f64 / report.total as f64 };
        points.push((x + slot * 0.35, top + plot_h * (1.0 - share)));
    }
    let line: Vec<String> = points.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
    let _ = writeln!(out, "<polyline class=\"cumulative\" points=\"{}\" fill=\"none\" stroke=\"{CUMULATIVE_COLOR}\" stroke-width=\"2.5\"/>", line.join(" "));
    for (x, y) in &points {
        let _ = writeln!(out, "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{CUMULATIVE_COLOR}\"/>");
    }
    out.push_str("</svg>\n");
    let _ = writeln!(
        out,
        "<p class=\"legend\"><span><i class=\"swatch\" style=\"background:{BAR_COLOR}\"></i>failures per cause (left axis)</span><span><i class=\"swatch\" style=\"background:{CUMULATIVE_COLOR}\"></i>cumulative share (right axis)</span></p>"
    );
}

/// The left and bottom axes of a plot area, with five count labels from 0 to `max` on the left.
fn axes(out: &mut String, left: f64, top: f64, w: f64, h: f64, max: f64) {
    let _ = writeln!(out, "<path d=\"M{left:.1},{top:.1} V{:.1} H{:.1}\" fill=\"none\" stroke=\"#868e96\"/>", top + h, left + w);
    for i in 0..=4 {
        let y = top + h * (1.0 - f64::from(i) / 4.0);
        let _ = writeln!(out, "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>", left - 6.0, y + 4.0, (max * f64::from(i) / 4.0).round());
    }
}

fn trend_lines(out: &mut String, report: &RankReport, trend: &TrendReport) {
    let (width, height, left, right, top, bottom) = (960.0, 260.0, 56.0, 24.0, 12.0, 36.0);
    let series: Vec<_> = trend.series.iter().take(TREND_LINES).collect();
    let n = trend.periods.len();
    let max = series.iter().flat_map(|s| s.counts.iter()).copied().max().unwrap_or(1).max(1) as f64;
    let plot_w = width - left - right;
    let plot_h = height - top - bottom;
    let x_of = |i: usize| left + plot_w * i as f64 / (n - 1) as f64;
    let _ = writeln!(out, "<svg id=\"trend\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"Failures per period of the top causes\">");
    axes(out, left, top, plot_w, plot_h, max);
    for i in [0, n / 2, n - 1] {
        let anchor = if i == 0 { "start" } else if i == n - 1 { "end" } else { "middle" };
        let _ = writeln!(out, "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text>", x_of(i), top + plot_h + 16.0, escape(&period_label(&trend.periods[i], trend.every.name())));
    }
    for (k, s) in series.iter().enumerate() {
        let points: Vec<String> = s.counts.iter().enumerate().map(|(i, &c)| format!("{:.1},{:.1}", x_of(i), top + plot_h * (1.0 - c as f64 / max))).collect();
        let _ = writeln!(
            out,
            "<polyline class=\"series\" points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"><title>#{} {} ({})</title></polyline>",
            points.join(" "),
            LINE_COLORS[k],
            k + 1,
            escape(&label(s.signature.values())),
            s.status.name()
        );
    }
    out.push_str("</svg>\n<p class=\"legend\">");
    let signatures: Vec<Vec<&str>> = series.iter().map(|s| s.signature.values().collect()).collect();
    for (k, s) in series.iter().enumerate() {
        let rank = report.buckets.iter().find(|b| b.signature == s.signature).map_or(k as u64 + 1, |b| b.rank);
        let _ = write!(
            out,
            "<span><i class=\"swatch\" style=\"background:{}\"></i>#{rank} {} <small>({})</small></span>",
            LINE_COLORS[k],
            escape(&shorten(&abbreviate_classes(&legend_label(&signatures, k)), 90)),
            s.status.name()
        );
    }
    out.push_str("</p>\n");
}

fn table(out: &mut String, report: &RankReport) {
    let columns = RankColumn::of(report);
    out.push_str("<table>\n<thead><tr>");
    for c in &columns {
        let _ = write!(out, "<th>{}</th>", escape(c.name(report)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for b in &report.buckets {
        out.push_str("<tr>");
        for c in &columns {
            let class = match c {
                c if c.is_number() => "n",
                RankColumn::Signature(_) => "sig",
                RankColumn::FirstSeen | RankColumn::LastSeen => "t",
                RankColumn::ExampleId => "id",
                _ => "",
            };
            let _ = write!(out, "<td class=\"{class}\">{}</td>", escape(&c.shown(b)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

/// Series `k`'s signature for a legend: the fields that tell the shown series apart most (the
/// most distinct values among them) first, those they share last, so a legend cut to its width
/// still shows what differs.
fn legend_label(signatures: &[Vec<&str>], k: usize) -> String {
    let fields = signatures[k].len();
    let distinct = |f: usize| signatures.iter().map(|s| s.get(f)).collect::<std::collections::BTreeSet<_>>().len();
    let mut order: Vec<usize> = (0..fields).collect();
    order.sort_by_key(|&f| std::cmp::Reverse(distinct(f)));
    label(order.into_iter().map(|f| signatures[k][f]).filter(|v| !v.is_empty()))
}

/// Java-style class names abbreviated as JVM logs do (logback's `%logger{0}`-like): each
/// package segment to its first letter, the class kept
/// (`org.apache.kafka.connect.errors.DataException` → `o.a.k.c.e.DataException`).
fn abbreviate_classes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let parts: Vec<&str> = word.split('.').collect();
        let (packages, class) = parts.split_at(parts.len() - 1);
        let is_class = packages.len() >= 2
            && packages.iter().all(|p| p.starts_with(|c: char| c.is_ascii_lowercase()) && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            && class[0].starts_with(|c: char| c.is_ascii_uppercase());
        if is_class {
            for p in packages {
                out.push_str(&p[..1]);
                out.push('.');
            }
            out.push_str(class[0]);
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_alphanumeric() || c == '.' || c == '_' || c == '$' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// A period's start as people read it: the date, with the hour for hourly periods.
fn period_label(start: &str, every: &str) -> String {
    if every == "hour" { start[..16].replace('T', " ") } else { start[..10].to_string() }
}

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// Text for HTML content and attribute values: markup characters as entities, control
/// characters dropped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{abbreviate_classes, escape, legend_label};

    #[test]
    fn legends_lead_with_what_differs_and_abbreviate_class_names() {
        let signatures = vec![
            vec!["org.apache.kafka.connect.errors.DataException", "org.apache.kafka.common.errors.SerializationException: Unknown magic byte!"],
            vec!["org.apache.kafka.connect.errors.DataException", "io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException: Schema <*> not found"],
            vec!["org.apache.kafka.connect.errors.ConnectException", "java.sql.BatchUpdateException: Duplicate entry <*> for key <*>"],
        ];
        // The root cause has three values among the three, the exception class two.
        assert_eq!(legend_label(&signatures, 0), "org.apache.kafka.common.errors.SerializationException: Unknown magic byte! · org.apache.kafka.connect.errors.DataException");
        assert_eq!(
            abbreviate_classes(&legend_label(&signatures, 1)),
            "i.c.k.s.c.r.e.RestClientException: Schema <*> not found · o.a.k.c.e.DataException"
        );
        // Alone, a series keeps its fields' order; sentences, versions and hosts are left as they are.
        assert_eq!(legend_label(&signatures[..1], 0), "org.apache.kafka.connect.errors.DataException · org.apache.kafka.common.errors.SerializationException: Unknown magic byte!");
        assert_eq!(abbreviate_classes("Timed out after 3.5 s calling payments.svc.local v1.2.3"), "Timed out after 3.5 s calling payments.svc.local v1.2.3");
    }

    #[test]
    fn markup_from_dumps_is_text() {
        assert_eq!(escape("<img src=x onerror=\"alert('1')\">&"), "&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;");
        assert_eq!(escape("a\u{0}b\u{1b}[31m"), "ab[31m");
    }
}
