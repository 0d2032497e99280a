//! The live page in a real headless Chromium: it loads the page of a null-backend run
//! twice and sees the figures, the chart and the hosts' counts move on.

use std::process::Command;
use std::time::Duration;

use crate::live::serving;

/// The headless Chromium on PATH, if any (the test that needs it says it skipped).
pub(crate) fn chromium(test: &str) -> Option<&'static str> {
    let found = ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new("sh")
            .args(["-c", &format!("command -v {c}")])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        eprintln!("SKIPPED {test}: no chromium on PATH (scripts/test.sh installs it)");
    }
    found
}

/// The live page's DOM after Chromium ran its script for 2.5 s (virtual time).
pub(crate) fn dump_dom(chromium: &str, addr: &str) -> String {
    crate::common::chromium_dom(chromium, &format!("http://{addr}/"), Some(2500))
}

/// The text of the element with `id` in a dumped DOM (up to its first child).
pub(crate) fn text_of(dom: &str, id: &str) -> String {
    let Some(at) = dom.find(&format!("id=\"{id}\"")) else {
        return String::new();
    };
    let rest = &dom[at..];
    let start = rest.find('>').map_or(rest.len(), |i| i + 1);
    rest[start..]
        .split('<')
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn chromium_sees_the_live_figures_change() {
    let Some(chromium) = chromium("chromium_sees_the_live_figures_change") else {
        return;
    };
    let (mut child, addr) = serving(&["--runtime", "12s"]);
    let dump = || dump_dom(chromium, &addr);
    let first = dump();
    std::thread::sleep(Duration::from_secs(2));
    let second = dump();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(text_of(&first, "status"), "running", "{first}");
    assert!(
        text_of(&first, "phase").starts_with("randread")
            || text_of(&first, "phase").starts_with("read"),
        "{}",
        text_of(&first, "phase")
    );
    let avg = text_of(&first, "avg");
    assert!(!avg.is_empty() && avg != "–", "{first}");
    // The last second's p50 · p99, in µs or ms, of every operation together and labelled
    // so (a mixed workload's reads and writes are not one latency).
    let lat = text_of(&second, "lat");
    assert!(lat.contains(" · ") && lat.ends_with('s'), "{lat}");
    assert!(
        second.contains("latency now, all ops: p50 · p99"),
        "{second}"
    );
    assert_eq!(
        text_of(&first, "eta").chars().last(),
        Some('s'),
        "the run's ETA: {first}"
    );
    assert_ne!(text_of(&first, "elapsed"), text_of(&second, "elapsed"));
    assert!(
        second.contains("<svg id=\"chart\"") && second.contains("<polyline"),
        "no chart drawn"
    );
    // What the server measured moves on: the per-second chart has more seconds, and
    // the host's operation count grew (the page's clock alone changes neither).
    assert!(
        chart_points(&second) > chart_points(&first),
        "chart: {} then {} points",
        chart_points(&first),
        chart_points(&second)
    );
    let ops = |dom: &str| -> f64 { parse_count(&cells_of(dom, "hosts_now")[2]) };
    assert!(ops(&second) > ops(&first), "{first}\n{second}");
}

/// The number of seconds the page's first chart line has.
fn chart_points(dom: &str) -> usize {
    dom.split("<polyline")
        .nth(1)
        .and_then(|p| p.split("points=\"").nth(1))
        .and_then(|p| p.split('"').next())
        .map_or(0, |p| p.split_whitespace().count())
}

/// The cells of the first body row of table `id`.
pub(crate) fn cells_of(dom: &str, id: &str) -> Vec<String> {
    let table = dom
        .split(&format!("id=\"{id}\""))
        .nth(1)
        .and_then(|t| t.split("<tbody>").nth(1))
        .and_then(|t| t.split("</tr>").next())
        .unwrap_or_else(|| panic!("no row in table {id}: {dom}"));
    table
        .split("<td")
        .skip(1)
        .map(|c| {
            c.split('>')
                .nth(1)
                .unwrap_or("")
                .split('<')
                .next()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

/// A count as the page writes it: 1234, 12.3k, 4.56M.
fn parse_count(text: &str) -> f64 {
    let t = text.trim();
    let (num, scale) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        Some('G') => (&t[..t.len() - 1], 1e9),
        _ => (t, 1.0),
    };
    num.parse::<f64>()
        .unwrap_or_else(|_| panic!("not a count: {text:?}"))
        * scale
}
