//! Reading every IO500 result format from the fixtures, checking scores and hashes, and
//! one-line errors naming file:line for malformed input.

use std::path::{Path, PathBuf};

use super::*;
use crate::io500::score::Invalid;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/io500")
        .join(rel)
}

fn text(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).unwrap()
}

fn err(text: &str) -> String {
    parse_text(Path::new("r.txt"), text)
        .unwrap_err()
        .to_string()
}

#[test]
fn a_result_summary_is_read_and_its_score_agrees() {
    let r = read(&fixture("lustre-isc24/result_summary.txt")).unwrap();
    assert_eq!(r.format, SourceFormat::Summary);
    assert_eq!(r.version.as_deref(), Some("io500-isc24_v3"));
    assert_eq!(r.phases.len(), 14);
    let easy = r.phase("ior-easy-write").unwrap();
    assert_eq!(
        (easy.value, easy.time, easy.valid),
        (38.417295, 331.482, true)
    );
    assert_eq!(r.decimals["find"], 6);
    let fs = r.score.as_ref().unwrap();
    assert_eq!(
        (fs.bandwidth, fs.metadata, fs.total),
        (14.878886, 82.573123, 35.051335)
    );
    assert_eq!(fs.line, 16);
    let c = r.check();
    assert_eq!(c.file_score_agrees, Some(true));
    assert!(c.ok(), "{:?} {:?}", c.score.reasons, c.problems);
    assert!((c.score.total - 35.051335).abs() < 2e-6);
    assert!(c.score.notes.is_empty(), "{:?}", c.score.notes);
}

#[test]
fn a_result_txt_is_read_with_its_hash_and_stonewall() {
    let r = read(&fixture("lustre-isc24/result.txt")).unwrap();
    assert_eq!(r.format, SourceFormat::Ini);
    assert_eq!(r.procs, Some(80));
    assert_eq!(
        r.stonewall,
        Some(iolab_core::units::TimeSpan::from_secs(300))
    );
    // The timestamp section has no score: it is no figure.
    assert_eq!(r.phases.len(), 13);
    let find = r.phase("find").unwrap();
    assert!(find.found.unwrap() > 0 && find.items.unwrap() > find.found.unwrap());
    match r.integrity.as_ref().unwrap() {
        Integrity::Io500Hash {
            expected,
            computed,
            as_invalid,
        } => {
            assert_eq!(expected, "CB8B5215");
            assert_eq!(computed, expected);
            assert!(!as_invalid);
        }
        other => panic!("{other:?}"),
    }
    let c = r.check();
    assert!(c.ok(), "{:?} {:?}", c.score.reasons, c.problems);
    // Both files of the run give the same figures.
    let s = read(&fixture("lustre-isc24/result_summary.txt")).unwrap();
    for f in &r.phases {
        let g = s.phase(&f.name).unwrap();
        assert_eq!(f.value, g.value, "{}", f.name);
        assert!((f.time - g.time).abs() < 1e-3, "{}", f.name);
    }
    // A directory reads result.txt.
    assert_eq!(
        read(&fixture("lustre-isc24")).unwrap().format,
        SourceFormat::Ini
    );
}

#[test]
fn a_debug_run_is_scored_but_invalid_for_submission() {
    let r = read(&fixture("debug-60s")).unwrap();
    assert_eq!(
        r.stonewall,
        Some(iolab_core::units::TimeSpan::from_secs(60))
    );
    assert_eq!(r.reported, ["stonewall-time 60s != 300s"]);
    let easy = r.phase("ior-easy-write").unwrap();
    assert!(!easy.valid);
    assert_eq!(
        easy.notes,
        ["Runtime is smaller than expected minimum runtime"]
    );
    assert!(r.score.as_ref().unwrap().invalid);
    let c = r.check();
    assert_eq!(
        c.problems,
        Vec::<String>::new(),
        "the hash matches as an invalid run"
    );
    assert!(matches!(
        r.integrity,
        Some(Integrity::Io500Hash {
            as_invalid: true,
            ..
        })
    ));
    assert!(!c.ok());
    let reasons: Vec<String> = c.score.reasons.iter().map(|r| r.to_string()).collect();
    assert_eq!(reasons[0], "the stonewall was 60 s; IO500 requires 300 s");
    assert_eq!(
        reasons[1],
        "ior-easy-write ran 64.913 s; a write phase must run at least 300 s"
    );
    assert_eq!(reasons.len(), 6, "{reasons:?}");
    assert_eq!(reasons[5], "stonewall-time 60s != 300s");
    assert!((c.score.total - 32.308613).abs() < 2e-6);
    let summary = read(&fixture("debug-60s/result_summary.txt")).unwrap();
    assert_eq!(summary.phases.iter().filter(|p| !p.valid).count(), 4);
    assert_eq!(summary.check().file_score_agrees, Some(true));
}

#[test]
fn isc20_lines_and_the_2019_script_are_read() {
    let r = read(&fixture("isc20-debug/result_summary.txt")).unwrap();
    assert_eq!(r.version.as_deref(), Some("io500-isc20_v3"));
    assert_eq!(r.phases.iter().filter(|p| !p.valid).count(), 4);
    assert!(r.score.as_ref().unwrap().invalid);
    let c = r.check();
    assert_eq!(c.file_score_agrees, Some(true));
    assert_eq!(c.score.reasons.len(), 4);

    let r = read(&fixture("script-2019/io500-output.txt")).unwrap();
    assert_eq!(r.format, SourceFormat::Script);
    assert_eq!(r.phases.len(), 12);
    assert_eq!(r.phases[0].name, "ior-easy-write");
    assert_eq!(r.phase("mdtest-hard-delete").unwrap().value, 2.625);
    assert_eq!(r.decimals["find"], 3);
    let c = r.check();
    assert_eq!(c.file_score_agrees, Some(true), "{:?}", c.problems);
    let reasons: Vec<String> = c.score.reasons.iter().map(|r| r.to_string()).collect();
    assert_eq!(
        reasons,
        [
            "ior-easy-write ran 58.270 s; a write phase must run at least 300 s",
            "One or more test phases invalid.  Not valid for IO-500 submission.",
        ]
    );
}

#[test]
fn a_failed_find_is_left_out_and_invalidates() {
    let r = read(&fixture("find-failed")).unwrap();
    let c = r.check();
    assert_eq!(c.file_score_agrees, Some(true));
    assert_eq!(c.score.metadata_phases, 7);
    assert_eq!(
        c.score.reasons,
        [Invalid::Zero {
            phase: "find".into()
        }]
    );
}

#[test]
fn extended_mode_keeps_the_standard_score() {
    let r = read(&fixture("extended-isc22/result_summary.txt")).unwrap();
    assert_eq!(r.phases.len(), 22);
    let x = r.extended_score.as_ref().unwrap();
    assert_eq!(x.total, 20.011361);
    let c = r.check();
    assert!(c.ok(), "{:?} {:?}", c.score.reasons, c.problems);
    assert!(c.score.notes.is_empty(), "{:?}", c.score.notes);
    assert!((c.score.total - 23.806987).abs() < 2e-6);
}

#[test]
fn an_edited_figure_shows() {
    let edited = text("lustre-isc24/result_summary.txt").replace("2.138706", "2.238706");
    let c = parse_text(Path::new("s.txt"), &edited).unwrap().check();
    assert_eq!(c.file_score_agrees, Some(false));
    assert!(!c.ok());
    assert!(
        c.problems[0].starts_with("line 16 says Bandwidth 14.878886 GiB/s"),
        "{}",
        c.problems[0]
    );
    // In result.txt the hash shows it too, even with the score edited to match.
    let edited = text("lustre-isc24/result.txt").replace("2.138706", "2.238706");
    let c = parse_text(Path::new("result.txt"), &edited)
        .unwrap()
        .check();
    assert_eq!(c.problems.len(), 2, "{:?}", c.problems);
    assert!(c.problems[1].starts_with("IO500's score hash in the file is CB8B5215"));
}

#[test]
fn whitespace_and_line_endings_are_tolerated() {
    let t = "IO500 version x (standard)\r\n\t[RESULT]\tior-easy-write   1.5  GiB/s :  time  300.5 seconds\r\n  [SCORE ]  Bandwidth 1.5 GiB/s : IOPS 0 kiops :   TOTAL 0  \r\n";
    let r = parse_text(Path::new("r.txt"), t).unwrap();
    assert_eq!(r.phases[0].value, 1.5);
    assert_eq!(r.phases[0].time, 300.5);
    assert_eq!(r.score.as_ref().unwrap().bandwidth, 1.5);
}

#[test]
fn inf_and_negative_figures_are_malformed_and_nan_is_not_measured() {
    let phase = |v: &str| format!("x\n[RESULT] ior-easy-write {v} GiB/s : time 300.1 seconds\n");
    for v in ["inf", "-inf", "infinity", "-1.500000"] {
        assert_eq!(
            err(&phase(v)),
            format!("r.txt:2: ior-easy-write: '{v}' is not a finite number of 0 or more")
        );
    }
    // IO500 prints nan for a phase that measured nothing: not a measurement, so the
    // phase is invalid (and left out of its mean by the score).
    for v in ["nan", "-nan"] {
        let r = parse_text(Path::new("r.txt"), &phase(v)).unwrap();
        assert!(r.phases[0].value.is_nan(), "{v}");
    }
    let r = parse_text(
        Path::new("r.txt"),
        "[RESULT] find -nan kIOPS : time 0.000 seconds [INVALID]\n",
    )
    .unwrap();
    assert!(r.phases[0].value.is_nan() && !r.phases[0].valid);
    assert_eq!(
        err("[RESULT] find 1.0 kIOPS : time -3.0 seconds\n"),
        "r.txt:1: find: time '-3.0' is not a finite number of 0 or more"
    );
    assert_eq!(
        err(
            "[RESULT] find 1.0 kIOPS : time 3 seconds\n[SCORE ] Bandwidth inf GiB/s : IOPS 2 kiops : TOTAL 1\n"
        ),
        "r.txt:2: [SCORE ] Bandwidth: 'inf' is not a finite number of 0 or more"
    );
    // result.txt holds the same figures.
    assert_eq!(
        err("[run]\n[find]\nscore = inf\n"),
        "r.txt:3: score 'inf' is not a finite number of 0 or more"
    );
    assert_eq!(
        err("[run]\n[find]\nscore = 1.0\nt_delta = -0.5\n"),
        "r.txt:4: t_delta '-0.5' is not a finite number of 0 or more"
    );
    // 0 is a figure (a phase that measured nothing), and so is IO500's "-0.000000".
    let r = parse_text(Path::new("r.txt"), &phase("-0.000000")).unwrap();
    assert_eq!(r.phases[0].value, 0.0);
}

#[test]
fn malformed_input_names_file_and_line() {
    assert_eq!(
        err("x\n[RESULT] ior-easy-write abc GiB/s : time 300 seconds\n"),
        "r.txt:2: ior-easy-write: 'abc' is not a number"
    );
    assert_eq!(
        err("[RESULT] ior-easy-write\n"),
        "r.txt:1: [RESULT] line: expected NAME VALUE UNIT : time SECONDS seconds after the tag"
    );
    assert_eq!(
        err("[RESULT] ior-easy-write 1.0 MB/s : time 3 seconds\n"),
        "r.txt:1: ior-easy-write: unit 'MB/s' is neither GiB/s nor kIOPS"
    );
    assert_eq!(
        err("[RESULT] find 1.0 kIOPS : 3 seconds\n"),
        "r.txt:1: find: no 'time SECONDS' (expected NAME VALUE UNIT : time SECONDS seconds after the tag)"
    );
    let twice =
        "[RESULT] find 1.0 kIOPS : time 3 seconds\n[RESULT] find 2.0 kIOPS : time 3 seconds\n";
    assert_eq!(err(twice), "r.txt:2: find appears twice (first on line 1)");
    assert_eq!(
        err(
            "[RESULT] find 1.0 kIOPS : time 3 seconds\n[SCORE ] Bandwidth 1 GiB/s : IOPS 2 kiops\n"
        ),
        "r.txt:2: [SCORE ] line has no TOTAL (expected Bandwidth X GiB/s : IOPS Y kiops : TOTAL Z after the tag)"
    );
    assert_eq!(
        err("nothing to see\n"),
        "r.txt holds no IO500 result: no [RESULT] lines and no phase sections with a score; give IO500's result_summary.txt or result.txt, or a directory holding them"
    );
    assert_eq!(
        err("[run]\nprocs = 4\n[find]\nscore = 1.0\ngarbage\n"),
        "r.txt:5: 'garbage' is neither a [section], a key = value line nor a ; comment"
    );
    assert_eq!(
        err("[run]\nprocs = four\n"),
        "r.txt:2: procs 'four' is not a whole number"
    );
    assert_eq!(
        err("[run]\n[find]\nscore = 1.0\n\n[SCORE]\nMD = 1.0\nSCORE = 1.0\n"),
        "r.txt:5: the score section has no BW = ... line"
    );
    assert_eq!(
        err("[run]\n[find]\nscore = x\n"),
        "r.txt:3: score 'x' is not a number"
    );
    assert_eq!(
        err("[run]\n[find]\nscore = 1\n[find]\n"),
        "r.txt:4: section [find] appears twice"
    );
    assert_eq!(
        err("[run]\n[bad name]\n"),
        "r.txt:2: '[bad name]' is not a [section] header"
    );
}

#[test]
fn directories_are_read_and_times_filled_in() {
    let dir = tempfile::tempdir().unwrap();
    assert!(read(dir.path()).unwrap_err().to_string().ends_with(
        "holds no IO500 result: no result.txt, result_summary.txt or iolab phases.json in it"
    ));
    // A result.txt written with verbosity 0 has no t_delta: result_summary.txt has them.
    let quiet: String = text("lustre-isc24/result.txt")
        .lines()
        .filter(|l| !l.starts_with("t_delta"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.path().join("result.txt"), quiet).unwrap();
    let r = read(dir.path()).unwrap();
    assert!(r.phases[0].time.is_nan());
    assert_eq!(
        r.check().score.notes[0],
        "ior-easy-write has no time in the result; its 300 s minimum is not checked"
    );
    std::fs::copy(
        fixture("lustre-isc24/result_summary.txt"),
        dir.path().join("result_summary.txt"),
    )
    .unwrap();
    let r = read(dir.path()).unwrap();
    assert_eq!(r.phases[0].time, 331.482);
    assert!(r.check().ok());
    std::fs::remove_file(dir.path().join("result.txt")).unwrap();
    assert_eq!(read(dir.path()).unwrap().format, SourceFormat::Summary);
    let missing = read(&dir.path().join("nope.txt")).unwrap_err().to_string();
    assert!(
        missing.starts_with("cannot read ")
            && missing.ends_with("nope.txt: No such file or directory"),
        "{missing}"
    );
}
