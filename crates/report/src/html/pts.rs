//! The page of an `iolab pts` test (SNIA PTS 2.0's report): the header of settings, the
//! steady-state convergence plot, the measurement-window plot of each tracked cell with
//! its average, the +-10 % and +-20 % bands and the least-squares line, the IOPS table
//! (block size x R/W mix) and the device's inventory. One self-contained document.

use std::fmt::Write as _;

use super::axis::Unit;
use super::chart::{Chart, Marks, Pt, Series, XAxis, YAxis};
use super::escape;

const STYLE: &str = include_str!("style.css");

/// A table's rows: block size, and a value per R/W mix.
pub type PtsTable = Vec<(String, Vec<f64>)>;

/// One tracked cell's measurement window.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowPlot {
    /// "4KiB 0/100".
    pub cell: String,
    /// The window's rounds, 1-based, and the cell's IOPS in each.
    pub rounds: Vec<usize>,
    pub iops: Vec<f64>,
    pub average: f64,
    /// The least-squares line: its value at the window's first round, and its slope per
    /// round.
    pub intercept: f64,
    pub slope: f64,
    pub steady: bool,
    /// "range 1.2 % of the average (limit 20 %), excursion 0.4 % (limit 10 %)".
    pub verdict: String,
}

/// What the page shows, every figure computed by the caller.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PtsPage {
    pub title: String,
    /// Test settings and verdict, as label and value.
    pub header: Vec<(String, String)>,
    /// Convergence: a series per cell (name, IOPS by round from round 1).
    pub convergence: Vec<(String, Vec<f64>)>,
    pub windows: Vec<WindowPlot>,
    /// The IOPS table: column headings (R/W mixes), rows (block size, IOPS per mix).
    pub mixes: Vec<String>,
    pub table: PtsTable,
    pub inventory: Vec<(String, String)>,
    /// The tracked figure's unit ("IOPS", "MB/s", "ms"), whether the convergence plot
    /// is on a log scale, the tables' decimals, the main table's title.
    pub unit: String,
    pub log: bool,
    pub decimals: usize,
    pub table_title: String,
    /// More tables of the same rows and columns (the latency test's 99.999th
    /// percentile, maximum and IOPS), each with its title and decimals.
    pub extra_tables: Vec<(String, usize, PtsTable)>,
}

fn pt(x: f64, y: f64, tip: String) -> Pt {
    Pt {
        x,
        y,
        range: None,
        label: None,
        tip,
    }
}

fn line(name: &str, ys: &[f64], color: usize, dashed: bool) -> Series {
    Series {
        name: name.to_string(),
        points: ys
            .iter()
            .enumerate()
            .map(|(i, y)| pt(i as f64, *y, format!("{name}: {y:.3}")))
            .collect(),
        dashed,
        color,
    }
}

fn convergence_chart(p: &PtsPage) -> Chart {
    let rounds = p
        .convergence
        .iter()
        .map(|(_, s)| s.len())
        .max()
        .unwrap_or(0);
    Chart {
        kind: "pts-convergence",
        title: format!("Steady-state convergence: {} of each round", p.unit),
        marks: Marks::Lines,
        x: XAxis::Categories {
            title: "round".into(),
            labels: (1..=rounds).map(|r| r.to_string()).collect(),
        },
        // IOPS of block sizes from 512 B to 1 MiB differ by orders of magnitude.
        y: YAxis {
            title: p.unit.clone(),
            unit: Unit::Count,
            log: p.log,
        },
        series: p
            .convergence
            .iter()
            .enumerate()
            .map(|(i, (name, s))| line(name, s, i, false))
            .collect(),
        spans: Vec::new(),
    }
}

fn window_chart(w: &WindowPlot, unit: &str) -> Chart {
    let n = w.iops.len();
    let flat = |f: f64| vec![w.average * f; n];
    let fit: Vec<f64> = (0..n).map(|i| w.intercept + w.slope * i as f64).collect();
    Chart {
        kind: "pts-window",
        title: format!(
            "Measurement window, {}: {}",
            w.cell,
            if w.steady { "steady" } else { "NOT steady" }
        ),
        marks: Marks::Lines,
        x: XAxis::Categories {
            title: "round".into(),
            labels: w.rounds.iter().map(|r| r.to_string()).collect(),
        },
        y: YAxis {
            title: unit.to_string(),
            unit: Unit::Count,
            log: false,
        },
        series: vec![
            line(&format!("{} {unit}", w.cell), &w.iops, 0, false),
            line("average", &flat(1.0), 1, false),
            line("least-squares fit", &fit, 2, false),
            line("+10 %", &flat(1.1), 3, true),
            line("-10 %", &flat(0.9), 3, true),
            line("+20 %", &flat(1.2), 4, true),
            line("-20 %", &flat(0.8), 4, true),
        ],
        spans: Vec::new(),
    }
}

fn rows(out: &mut String, id: &str, rows: &[(String, String)]) {
    let _ = writeln!(out, "<table class=\"{id}\">");
    for (k, v) in rows {
        let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    }
    out.push_str("</table>\n");
}

/// The page as one HTML document.
pub fn render_pts_html(p: &PtsPage) -> String {
    let mut out = String::new();
    let title = escape(&p.title);
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>"
    );
    out.push_str("<section id=\"header\"><h2>Test</h2>\n");
    rows(&mut out, "header", &p.header);
    out.push_str("</section>\n<section id=\"convergence\"><h2>Steady-state convergence</h2>\n");
    out.push_str(&convergence_chart(p).to_svg());
    out.push_str("</section>\n<section id=\"window\"><h2>Steady-state measurement window</h2>\n");
    for w in &p.windows {
        out.push_str(&window_chart(w, &p.unit).to_svg());
        let unit = escape(&p.unit);
        let _ = writeln!(
            out,
            "<p class=\"note\">{}: average {:.d$} {unit}, slope {:.d$} {unit} per round; {}</p>",
            escape(&w.cell),
            w.average,
            w.slope,
            escape(&w.verdict),
            d = p.decimals + 1
        );
    }
    out.push_str("</section>\n");
    let mut tables = vec![("iops", &p.table_title, p.decimals, &p.table)];
    for (title, d, rows) in &p.extra_tables {
        tables.push(("more", title, *d, rows));
    }
    for (id, title, d, rows) in tables {
        let _ = write!(
            out,
            "<section id=\"{id}\"><h2>{}</h2>\n<table class=\"{id}\">\n<tr><th>block size</th>",
            escape(title)
        );
        for m in &p.mixes {
            let _ = write!(out, "<th>{}</th>", escape(m));
        }
        out.push_str("</tr>\n");
        for (bs, vals) in rows {
            let _ = write!(out, "<tr><th>{}</th>", escape(bs));
            for v in vals {
                let _ = write!(out, "<td>{v:.d$}</td>");
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n</section>\n");
    }
    out.push_str("<section id=\"inventory\"><h2>Device</h2>\n");
    rows(&mut out, "inventory", &p.inventory);
    out.push_str("</section>\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_ptss_parts_with_the_window_bands() {
        let p = PtsPage {
            title: "PTS IOPS".into(),
            header: vec![("device".into(), "/dev/loop9".into())],
            convergence: vec![("4KiB 0/100".into(), vec![9000.0, 5000.0, 4000.0])],
            windows: vec![WindowPlot {
                cell: "4KiB 0/100".into(),
                rounds: vec![2, 3, 4, 5, 6],
                iops: vec![100.0, 101.0, 99.0, 100.0, 100.0],
                average: 100.0,
                intercept: 100.2,
                slope: -0.1,
                steady: true,
                verdict: "steady".into(),
            }],
            mixes: vec!["100/0".into(), "0/100".into()],
            table: vec![("4KiB".into(), vec![12345.0, 100.0])],
            inventory: vec![("model".into(), "QEMU <disk>".into())],
            unit: "IOPS".into(),
            log: true,
            decimals: 0,
            table_title: "IOPS: block size x R/W mix".into(),
            extra_tables: vec![(
                "maximum response time, ms".into(),
                0,
                vec![("4KiB".into(), vec![1.5, 2.25])],
            )],
        };
        let html = render_pts_html(&p);
        assert!(html.contains("data-chart=\"pts-convergence\""));
        assert!(html.contains("data-chart=\"pts-window\""));
        for band in [
            "+10 %",
            "-10 %",
            "+20 %",
            "-20 %",
            "least-squares fit",
            "average",
        ] {
            assert!(html.contains(band), "{band}");
        }
        assert!(html.contains("<td>12345</td>"));
        assert!(html.contains("<h2>maximum response time, ms</h2>") && html.contains("<td>2</td>"));
        assert!(html.contains("QEMU &lt;disk&gt;"));
    }
}
