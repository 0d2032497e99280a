//! `iolab audit` as text: [`render_audit`] gives each finding not passed (every one with
//! `all`) with its current and recommended value and why it matters, then the counts.

use std::fmt::Write as _;

use iolab_core::audit::{Finding, Status};

/// The findings as `iolab audit` prints them (passing ones only with `all`), closing
/// with how many there are to look at, fine and unknown.
pub fn render_audit(findings: &[Finding], all: bool) -> String {
    let mut out = String::new();
    for f in findings {
        if f.status == Status::Pass && !all {
            continue;
        }
        let subject = f
            .subject
            .as_deref()
            .map(|s| format!(" [{s}]"))
            .unwrap_or_default();
        let status = match f.status {
            Status::Pass => "ok".to_string(),
            Status::Warn => format!("{:?}", f.severity).to_lowercase(),
            Status::Unknown => "unknown".to_string(),
        };
        let _ = writeln!(out, "{status:<8} {}{subject}", f.title);
        let _ = writeln!(
            out,
            "         current {} · recommended {}",
            f.current.as_deref().unwrap_or("unknown"),
            f.recommended
        );
        let _ = writeln!(out, "         {}", f.why);
        if let Some(n) = &f.note {
            let _ = writeln!(out, "         ({n})");
        }
    }
    let warned = findings.iter().filter(|f| f.status == Status::Warn).count();
    let passed = findings.iter().filter(|f| f.status == Status::Pass).count();
    let unknown = findings.len() - warned - passed;
    let _ = writeln!(
        out,
        "{} checks: {warned} to look at, {passed} fine{}, {unknown} unknown",
        findings.len(),
        if all || passed == 0 {
            ""
        } else {
            " (not shown; --all shows them)"
        },
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::audit::Severity;

    fn finding(id: &str, status: Status, note: Option<&str>) -> Finding {
        Finding {
            id: id.into(),
            title: format!("{id} title"),
            subject: (id == "rmem").then(|| "eth0".to_string()),
            source: "/proc/sys/x".into(),
            current: (status != Status::Unknown).then(|| "1".to_string()),
            recommended: "2".into(),
            severity: Severity::Warn,
            status,
            why: "because".into(),
            note: note.map(str::to_string),
        }
    }

    #[test]
    fn render_audit_hides_passes_unless_all_and_counts_them() {
        let findings = vec![
            finding("rmem", Status::Warn, None),
            finding("thp", Status::Pass, None),
            finding("gov", Status::Unknown, Some("no permission")),
        ];
        let text = render_audit(&findings, false);
        assert_eq!(
            text,
            "warn     rmem title [eth0]\n         current 1 · recommended 2\n         because\n\
             unknown  gov title\n         current unknown · recommended 2\n         because\n         (no permission)\n\
             3 checks: 1 to look at, 1 fine (not shown; --all shows them), 1 unknown\n"
        );
        let all = render_audit(&findings, true);
        assert!(all.contains("ok       thp title\n"), "{all}");
        assert!(
            all.ends_with("3 checks: 1 to look at, 1 fine, 1 unknown\n"),
            "{all}"
        );
    }
}
