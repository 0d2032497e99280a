//! `iolab io500 score`: read an IO500 result (IO500's own or iolab's), recompute and
//! check its score, and store it with --import.

use anyhow::{Context, Result};
use iolab_core::result::Provenance;
use iolab_suites::io500::{Check, Integrity, ParsedResult, render, run_from_parsed};

use super::Io500ScoreArgs;
use crate::args::StoreArgs;
use crate::exit;
use crate::sink::open_store;

pub(super) fn score(args: Io500ScoreArgs) -> Result<u8> {
    let parsed = iolab_suites::io500::read(&args.path)?;
    let check = parsed.check();
    let stored = if args.import {
        Some(import(&args, &parsed)?)
    } else {
        None
    };
    if args.json {
        let doc = serde_json::json!({ "result": parsed, "check": check, "stored": stored });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_score(&parsed, &check, stored.as_deref());
    }
    Ok(if check.ok() { exit::OK } else { exit::FAILED })
}

fn import(args: &Io500ScoreArgs, parsed: &ParsedResult) -> Result<String> {
    let rev = env!("IOLAB_GIT_REVISION");
    let provenance = Provenance {
        iolab_version: env!("CARGO_PKG_VERSION").to_string(),
        git_revision: (!rev.is_empty()).then(|| rev.to_string()),
        command: crate::runtime::command_line(),
        hosts: Vec::new(),
        ranks: parsed.procs.unwrap_or(0),
        target: parsed.path.display().to_string(),
        inventory: None,
        process: None,
    };
    let mut record = run_from_parsed(parsed, provenance, iolab_core::civil::now_ms());
    record.label = args.label.clone();
    let mut store = open_store(&StoreArgs {
        db: args.db.clone(),
        no_store: false,
    })?;
    let id = store
        .import_run(&record)
        .with_context(|| format!("storing {}", parsed.path.display()))?;
    Ok(id.to_string())
}

fn print_score(parsed: &ParsedResult, check: &Check, stored: Option<&str>) {
    let mut header = format!("{}: {}", parsed.path.display(), parsed.format.describe());
    if let Some(v) = &parsed.version {
        header.push_str(&format!(", {v}"));
    }
    if let Some(p) = parsed.procs {
        header.push_str(&format!(", {p} ranks"));
    }
    print!("{}", render(&header, &parsed.phases, &check.score));
    match (check.file_score_agrees, &parsed.score) {
        (Some(true), Some(fs)) => {
            println!("the file's score (line {}) agrees with its phases", fs.line)
        }
        (None, _) => println!("the file states no score; the one above is recomputed"),
        _ => {}
    }
    if let Some(x) = &parsed.extended_score {
        println!(
            "extended-mode score (line {}, not checked): Bandwidth {:.6} GiB/s : IOPS {:.6} kiops : TOTAL {:.6}",
            x.line, x.bandwidth, x.metadata, x.total
        );
    }
    match &parsed.integrity {
        Some(
            i @ Integrity::Io500Hash {
                expected,
                as_invalid,
                ..
            },
        ) if i.intact() => println!(
            "IO500's score hash {expected} matches the file's values{}",
            if *as_invalid {
                " (as an invalid run)"
            } else {
                ""
            }
        ),
        Some(i @ Integrity::Sha256 { checked, .. }) if i.intact() => {
            println!("hash.txt matches {}", checked.join(", "))
        }
        _ => {}
    }
    for note in &check.score.notes {
        println!("note: {note}");
    }
    for problem in &check.problems {
        println!("problem: {problem}");
    }
    if check.score.valid() {
        println!("valid for submission");
    } else {
        println!("invalid for submission (fine for testing):");
        for r in &check.score.reasons {
            println!("  - {r}");
        }
    }
    if let Some(id) = stored {
        println!("stored as {id} (kind io500)");
    }
}
