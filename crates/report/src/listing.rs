//! `iolab results list` in every format: aligned text, JSON, CSV (the csv crate),
//! Markdown and HTML, one row per run ([`RunSummaryRow`]) with the columns of
//! [`LIST_COLUMNS`].

use iolab_core::listing::RunSummaryRow;
use iolab_core::result::RunStatus;

use crate::Format;
use crate::table::escape_control;

/// A time in ms since the Unix epoch as `YYYY-MM-DD HH:MM` (UTC).
pub fn date(ms: i64) -> String {
    let t = iolab_core::civil::UtcTime::from_ms(ms);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        t.year, t.month, t.day, t.hour, t.minute
    )
}

const LIST_COLUMNS: [&str; 10] = [
    "id",
    "label",
    "kind",
    "status",
    "started_utc",
    "started_at_ms",
    "finished_at_ms",
    "imported",
    "phases",
    "target",
];

/// The cells of one listed run, in [`LIST_COLUMNS`] order.
fn list_cells(r: &RunSummaryRow) -> [String; 10] {
    [
        r.id.to_string(),
        r.label.clone().unwrap_or_default(),
        r.kind.clone(),
        status_word(r.status),
        date(r.started_at_ms),
        r.started_at_ms.to_string(),
        r.finished_at_ms.map(|v| v.to_string()).unwrap_or_default(),
        r.imported.to_string(),
        r.phases.to_string(),
        r.target.clone(),
    ]
}

fn status_word(s: RunStatus) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// `results list` in a format: aligned text, a JSON array of objects, CSV with a header,
/// a Markdown table or a plain HTML table.
pub fn render_list(format: Format, rows: &[RunSummaryRow]) -> String {
    match format {
        Format::Text => list_text(rows),
        Format::Json => list_json(rows),
        Format::Csv => list_csv(rows),
        Format::Markdown => list_markdown(rows),
        Format::Html => list_html(rows),
    }
}

fn list_text(rows: &[RunSummaryRow]) -> String {
    let mut out = format!(
        "{:<6} {:<16} {:<9} {:<11} {:<16} {:>6}  target\n",
        "id", "label", "kind", "status", "started (UTC)", "phases"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<6} {:<16} {:<9} {:<11} {:<16} {:>6}  {}\n",
            r.id.to_string(),
            escape_control(r.label.as_deref().unwrap_or_default()),
            r.kind,
            status_word(r.status),
            date(r.started_at_ms),
            r.phases,
            escape_control(&r.target)
        ));
    }
    out
}

fn list_json(rows: &[RunSummaryRow]) -> String {
    let runs: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id.to_string(),
                "label": r.label,
                "kind": r.kind,
                "status": status_word(r.status),
                "started_utc": date(r.started_at_ms),
                "started_at_ms": r.started_at_ms,
                "finished_at_ms": r.finished_at_ms,
                "imported": r.imported,
                "phases": r.phases,
                "target": r.target,
            })
        })
        .collect();
    serde_json::to_string_pretty(&runs).expect("a run list serializes to JSON") + "\n"
}

fn list_csv(rows: &[RunSummaryRow]) -> String {
    // RFC 4180 quoting by the csv crate.
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let written = std::iter::once(w.write_record(LIST_COLUMNS))
        .chain(rows.iter().map(|r| w.write_record(list_cells(r))))
        .collect::<Result<(), _>>();
    written.expect("writing CSV to memory cannot fail");
    let bytes = w.into_inner().expect("flushing CSV to memory cannot fail");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8")
}

fn list_markdown(rows: &[RunSummaryRow]) -> String {
    let mut out = format!("| {} |\n", LIST_COLUMNS.join(" | "));
    out.push_str(&format!("|{}\n", " --- |".repeat(LIST_COLUMNS.len())));
    for r in rows {
        let cells: Vec<String> = list_cells(r)
            .iter()
            .map(|c| c.replace('|', "\\|"))
            .collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

fn list_html(rows: &[RunSummaryRow]) -> String {
    let mut out = String::from("<table class=\"runs\">\n<thead><tr>");
    for c in LIST_COLUMNS {
        out.push_str(&format!("<th>{c}</th>"));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        out.push_str("<tr>");
        for c in list_cells(r) {
            out.push_str(&format!("<td>{}</td>", html_text(&c)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

fn html_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
