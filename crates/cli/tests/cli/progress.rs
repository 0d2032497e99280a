//! The progress display of a study: on a terminal (a pseudo-terminal `script` makes) a
//! bar for the whole run (phase n of N, elapsed, ETA) above the current phase's line,
//! drawn again for every phase after the one before printed its results; when stderr is
//! not a terminal, no escape codes, and with --progress plain lines.

use std::process::Command;

use crate::common::{iolab, path};

const STUDY: &str = r#"
name = "two"
description = "two null-backend phases"
[defaults]
backend = "null"
block_size = "4KiB"
runtime = "1500ms"
[[sweep]]
name = "s"
[[sweep.phase]]
name = "first"
rw = "write"
[[sweep.phase]]
name = "second"
rw = "read"
"#;

fn study_file(dir: &std::path::Path) -> std::path::PathBuf {
    let file = dir.join("two.toml");
    std::fs::write(&file, STUDY).unwrap();
    file
}

/// What a terminal would show, escape codes and carriage returns taken as line breaks.
fn screen_lines(raw: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // CSI: ESC [ parameters, then a final letter.
                if chars.peek() == Some(&'[') {
                    for c in chars.by_ref() {
                        if c.is_ascii_alphabetic() {
                            break;
                        }
                    }
                }
                lines.push(std::mem::take(&mut line));
            }
            '\r' | '\n' => lines.push(std::mem::take(&mut line)),
            c => line.push(c),
        }
    }
    lines.push(line);
    lines
        .into_iter()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn a_study_on_a_terminal_draws_the_run_bar_over_every_phase() {
    let script_works = Command::new("script")
        .args(["-q", "-c", "true", "/dev/null"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !script_works {
        eprintln!("SKIPPED: no script (util-linux) to make a terminal");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = study_file(dir.path());
    let command = format!(
        "{} study run {} --dir {} --no-store",
        env!("CARGO_BIN_EXE_iolab"),
        path(&file),
        path(dir.path())
    );
    let out = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env("TERM", "xterm")
        .output()
        .unwrap();
    let raw = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{raw}");
    let lines = screen_lines(&raw);
    let drawn = |what: &[&str]| lines.iter().any(|l| what.iter().all(|w| l.contains(w)));
    // The run's bar, before and after the first phase ended, and each phase's line: the
    // second phase has its bars too, drawn again after the first one's results.
    assert!(drawn(&["0/2 phases  elapsed ", " ETA "]), "{lines:#?}");
    assert!(drawn(&["1/2 phases  elapsed ", " ETA "]), "{lines:#?}");
    assert!(drawn(&[" first  ", "workers done"]), "{lines:#?}");
    assert!(drawn(&[" second  ", "workers done"]), "{lines:#?}");
}

#[test]
fn without_a_terminal_progress_has_no_escape_codes() {
    let dir = tempfile::tempdir().unwrap();
    let file = study_file(dir.path());
    for progress in [false, true] {
        let mut c = iolab();
        c.args(["study", "run", path(&file), "--dir", path(dir.path())]);
        c.arg("--no-store");
        if progress {
            c.arg("--progress");
        }
        let out = c.output().unwrap();
        assert!(out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains('\u{1b}'), "{err}");
        let plain: Vec<&str> = err.lines().filter(|l| l.contains("workers done")).collect();
        if progress {
            // One plain line as each phase starts (then one every ten seconds).
            assert_eq!(plain.len(), 2, "{err}");
            assert!(plain[1].contains("phase 2 of 2  elapsed "), "{err}");
        } else {
            assert!(plain.is_empty(), "{err}");
        }
    }
}
