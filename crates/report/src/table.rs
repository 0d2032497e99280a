//! A plain table model, [`Table`], drawn three ways: aligned terminal text (laid out by
//! comfy-table, which measures cells by their width on screen, so "µs" or a label in
//! CJK characters does not shift a column), Markdown and HTML. Renderers build tables of
//! formatted cells; this module only lays them out.

use std::fmt::Write as _;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    pub headers: Vec<String>,
    pub align: Vec<Align>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these headers; a header starting with '>' is right-aligned (numbers).
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers
                .iter()
                .map(|h| h.trim_start_matches('>').to_string())
                .collect(),
            align: headers
                .iter()
                .map(|h| {
                    if h.starts_with('>') {
                        Align::Right
                    } else {
                        Align::Left
                    }
                })
                .collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows
            .push(row.into_iter().map(|c| escape_control(&c)).collect());
    }

    fn line(&self, cells: &[String], widths: &[usize], sep: &str) -> String {
        let parts: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let cell = cells.get(i).map(String::as_str).unwrap_or("");
                let pad = " ".repeat(w.saturating_sub(cell.chars().count()));
                match self.align[i] {
                    Align::Left => format!("{cell}{pad}"),
                    Align::Right => format!("{pad}{cell}"),
                }
            })
            .collect();
        parts.join(sep)
    }

    /// Columns padded to their widest cell (on screen), two spaces apart, no borders and
    /// no trailing spaces.
    pub fn to_text(&self) -> String {
        use comfy_table::{CellAlignment, ContentArrangement, presets};
        let mut t = comfy_table::Table::new();
        t.load_style(presets::NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(&self.headers);
        for row in &self.rows {
            let mut cells = row.clone();
            cells.resize(self.headers.len(), String::new());
            t.add_row(cells);
        }
        for (i, column) in t.column_iter_mut().enumerate() {
            // Two spaces between columns, none before the first.
            column.set_padding((u16::from(i > 0), 1));
            if self.align.get(i) == Some(&Align::Right) {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
        let mut out = String::new();
        for line in t.lines() {
            let _ = writeln!(out, "{}", line.trim_end());
        }
        out
    }

    /// A GitHub-flavoured Markdown table; '|' in cells is escaped.
    pub fn to_markdown(&self) -> String {
        let esc: Vec<String> = self.headers.iter().map(|h| md_cell(h)).collect();
        let widths: Vec<usize> = {
            let mut w: Vec<usize> = esc.iter().map(|h| h.chars().count().max(3)).collect();
            for row in &self.rows {
                for (i, c) in row.iter().enumerate().take(w.len()) {
                    w[i] = w[i].max(md_cell(c).chars().count());
                }
            }
            w
        };
        let mut out = String::new();
        let _ = writeln!(out, "| {} |", self.line(&esc, &widths, " | "));
        let rule: Vec<String> = widths
            .iter()
            .zip(&self.align)
            .map(|(w, a)| match a {
                Align::Left => "-".repeat(*w),
                Align::Right => format!("{}:", "-".repeat(w - 1)),
            })
            .collect();
        let _ = writeln!(out, "| {} |", rule.join(" | "));
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(|c| md_cell(c)).collect();
            let _ = writeln!(out, "| {} |", self.line(&cells, &widths, " | "));
        }
        out
    }

    /// An HTML table with a class; right-aligned columns get class "num".
    pub fn to_html(&self, class: &str) -> String {
        self.to_html_rows(class, &[])
    }

    /// As [`Table::to_html`], row i of the body getting class `row_classes[i]`.
    pub fn to_html_rows(&self, class: &str, row_classes: &[&str]) -> String {
        let mut out = format!("<table class=\"{class}\">\n<thead><tr>");
        for (h, a) in self.headers.iter().zip(&self.align) {
            let _ = write!(out, "<th{}>{}</th>", td_class(*a), escape(h));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for (r, row) in self.rows.iter().enumerate() {
            match row_classes.get(r) {
                Some(c) => {
                    let _ = write!(out, "<tr class=\"{c}\">");
                }
                None => out.push_str("<tr>"),
            }
            for (i, c) in row.iter().enumerate() {
                let a = self.align.get(i).copied().unwrap_or(Align::Left);
                let _ = write!(out, "<td{}>{}</td>", td_class(a), escape(c));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
        out
    }
}

fn td_class(a: Align) -> &'static str {
    match a {
        Align::Left => "",
        Align::Right => " class=\"num\"",
    }
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Escapes text for HTML and SVG content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lays_out_three_ways() {
        let mut t = Table::new(&["name", ">value"]);
        t.push(vec!["a|b".into(), "1.5 µs".into()]);
        t.push(vec!["long name".into(), "2".into()]);
        assert_eq!(
            t.to_text(),
            "name        value\na|b        1.5 µs\nlong name       2\n"
        );
        assert_eq!(
            t.to_markdown(),
            "| name      |  value |\n| --------- | -----: |\n| a\\|b      | 1.5 µs |\n| long name |      2 |\n"
        );
        assert!(t.to_html("t").contains("<td class=\"num\">1.5 µs</td>"));
    }

    #[test]
    fn text_columns_align_by_width_on_screen() {
        // Four CJK characters take eight columns of a terminal.
        let mut t = Table::new(&["target", ">MB/s"]);
        t.push(vec!["ディスク".into(), "1".into()]);
        t.push(vec!["nvme0".into(), "22".into()]);
        assert_eq!(
            t.to_text(),
            "target    MB/s\nディスク     1\nnvme0       22\n"
        );
    }
}

/// `text` with control characters written out (`\n`, `\t`, `\u{1b}`): a path or label
/// holding them must not break a table's lines or send escape codes to the terminal.
pub fn escape_control(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod escape_tests {
    use super::*;

    #[test]
    fn control_characters_are_written_out() {
        assert_eq!(escape_control("/mnt/a"), "/mnt/a");
        assert_eq!(
            escape_control("/tmp/x\ny\t\u{1b}[31mz"),
            "/tmp/x\\ny\\t\\u{1b}[31mz"
        );
        let mut t = Table::new(&["path"]);
        t.push(vec!["a\nb".into()]);
        assert_eq!(t.to_text().lines().count(), 2, "{}", t.to_text());
    }
}
