//! iolab's output is IO500's format to the character, and a result directory reads back
//! to the same figures with its hashes checked.

use super::*;
use crate::io500::parse::read;
use crate::io500::score::Invalid;
use iolab_core::spec::io500::Io500Spec;
use iolab_core::units::TimeSpan;

fn config(stonewall: u64) -> Io500Config {
    Io500Config {
        tool: "iolab 0.1.0".into(),
        ranks: 4,
        target: "/scratch/io500".into(),
        spec: Io500Spec {
            stonewall: TimeSpan::from_secs(stonewall),
            ..Io500Spec::default()
        },
    }
}

/// Figures with more digits than the output prints, writes over 300 s.
fn figures() -> Vec<PhaseFigure> {
    let mut out = Vec::new();
    for (i, def) in crate::io500::phases::PHASES.iter().enumerate() {
        let value = if def.name == "timestamp" {
            0.0
        } else {
            1.0 + i as f64 * 1.234_567_891
        };
        let time = if def.is_write() {
            300.5 + i as f64
        } else {
            20.123_456
        };
        let mut f = PhaseFigure::new(def.name, value, time);
        if def.name == "find" {
            f.found = Some(1234);
            f.items = Some(99_000);
        }
        out.push(f);
    }
    out
}

#[test]
fn lines_are_io500s_to_the_character() {
    // As IO500 printed them (ISC24 submission 708, result_summary.txt).
    let f = PhaseFigure::new("ior-easy-write", 352.803032, 386.698);
    assert_eq!(
        result_line(&f, false),
        "[RESULT]       ior-easy-write      352.803032 GiB/s : time 386.698 seconds"
    );
    let f = PhaseFigure::new("mdtest-hard-delete", 58.712616, 425.7229);
    assert_eq!(
        result_line(&f, false),
        "[RESULT]   mdtest-hard-delete       58.712616 kIOPS : time 425.723 seconds"
    );
    let f = PhaseFigure::new("timestamp", 0.0, 0.0003);
    assert_eq!(
        result_line(&f, false),
        "[      ]            timestamp        0.000000 kIOPS : time 0.000 seconds"
    );
    let f = PhaseFigure::new("find", 0.0, 0.0);
    assert_eq!(
        result_line(&f, true),
        "[RESULT]                 find        0.000000 kIOPS : time 0.000 seconds [INVALID]"
    );
    let s = Score {
        bandwidth: 122.31263073867203,
        metadata: 192.3551258688645,
        total: 153.386640490915,
        bandwidth_phases: 4,
        metadata_phases: 8,
        reasons: Vec::new(),
        notes: Vec::new(),
    };
    assert_eq!(
        score_line(&s),
        "[SCORE ] Bandwidth 122.312631 GiB/s : IOPS 192.355126 kiops : TOTAL 153.386640"
    );
    let invalid = Score {
        reasons: vec![Invalid::FindMatchedNothing],
        ..s
    };
    assert!(score_line(&invalid).ends_with("TOTAL 153.386640 [INVALID]"));
}

#[test]
fn a_result_directory_reads_back_to_the_same_figures() {
    let dir = tempfile::tempdir().unwrap();
    let figs = figures();
    let s = write_result_dir(dir.path(), &config(300), &figs).unwrap();
    assert!(s.valid(), "{:?}", s.reasons);

    let r = read(dir.path()).unwrap();
    assert_eq!(r.format, crate::io500::parse::SourceFormat::Iolab);
    // phases.json keeps the figures (serde_json reads floats back to within an ulp).
    assert_eq!(r.phases.len(), figs.len());
    for (a, b) in r.phases.iter().zip(&figs) {
        assert_eq!(
            (&a.name, a.found, a.items, a.valid),
            (&b.name, b.found, b.items, b.valid)
        );
        assert!(
            (a.value - b.value).abs() <= 1e-14 * b.value.abs(),
            "{}",
            a.name
        );
        assert!(
            (a.time - b.time).abs() <= 1e-14 * b.time.abs(),
            "{}",
            a.name
        );
    }
    assert_eq!(r.procs, Some(4));
    assert_eq!(r.version.as_deref(), Some("iolab 0.1.0"));
    let c = r.check();
    assert!(c.ok(), "{:?} {:?}", c.score.reasons, c.problems);
    assert_eq!(c.file_score_agrees, Some(true));
    assert!((c.score.total - s.total).abs() <= 1e-12 * s.total);
    assert_eq!(c.score.reasons, s.reasons);
    assert!(
        matches!(&r.integrity, Some(Integrity::Sha256 { checked, changed })
        if checked.len() == 3 && changed.is_empty())
    );

    // result.txt alone parses as IO500's format to the same figures, 6 decimals.
    let alone = read(&dir.path().join(RESULT_FILE)).unwrap();
    assert_eq!(alone.format, crate::io500::parse::SourceFormat::Iolab);
    assert_eq!(alone.stonewall, Some(TimeSpan::from_secs(300)));
    assert_eq!(alone.phases.len(), figs.len());
    for (a, b) in alone.phases.iter().zip(&figs) {
        assert_eq!(a.name, b.name);
        assert!((a.value - b.value).abs() <= 5e-7, "{}", a.name);
        assert!((a.time - b.time).abs() <= 5e-4, "{}", a.name);
    }
    let c = alone.check();
    assert!(c.ok(), "{:?} {:?}", c.score.reasons, c.problems);

    // hash.txt is sha256sum's format over the three files.
    let sums = std::fs::read_to_string(dir.path().join(HASH_FILE)).unwrap();
    let lines: Vec<&str> = sums.lines().collect();
    assert_eq!(lines.len(), 3);
    for (line, name) in lines
        .iter()
        .zip(["config.json", "phases.json", "result.txt"])
    {
        let bytes = std::fs::read(dir.path().join(name)).unwrap();
        assert_eq!(
            *line,
            format!("{}  {name}", crate::io500::sha256::hex_digest(&bytes))
        );
    }
}

#[test]
fn tampering_shows() {
    let dir = tempfile::tempdir().unwrap();
    write_result_dir(dir.path(), &config(300), &figures()).unwrap();
    let path = dir.path().join(PHASES_FILE);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("\"value\": 2.", "\"value\": 3.", 1)).unwrap();
    let c = read(dir.path()).unwrap().check();
    assert!(!c.ok());
    assert!(
        c.problems
            .iter()
            .any(|p| p == "hash.txt does not match phases.json: changed after the run"),
        "{:?}",
        c.problems
    );
    assert_eq!(c.file_score_agrees, Some(false));

    std::fs::remove_file(dir.path().join(HASH_FILE)).unwrap();
    let c = read(dir.path()).unwrap().check();
    assert!(c.problems.iter().any(|p| p.contains("hash.txt (missing)")));

    std::fs::write(dir.path().join(HASH_FILE), "not a hash\n").unwrap();
    let e = read(dir.path()).unwrap_err().to_string();
    assert!(
        e.ends_with("hash.txt:1: expected a SHA-256 in hex, two spaces and a file name"),
        "{e}"
    );
}

#[test]
fn a_short_stonewall_is_marked_like_io500_marks_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut figs = figures();
    for f in figs.iter_mut() {
        f.time = f.time.min(6.0);
    }
    let s = write_result_dir(dir.path(), &config(5), &figs).unwrap();
    assert!(!s.valid());
    let text = std::fs::read_to_string(dir.path().join(RESULT_FILE)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "iolab 0.1.0 IO500 (standard, stonewall 5s)");
    assert!(lines[1].ends_with("seconds [INVALID]"), "{}", lines[1]);
    assert!(!lines[7].ends_with("[INVALID]"), "{}", lines[7]);
    assert!(lines.last().unwrap().ends_with("[INVALID]"));
    let c = read(dir.path()).unwrap().check();
    assert_eq!(c.score.reasons, s.reasons);
    assert_eq!(c.score.reasons[0], Invalid::Stonewall { secs: 5.0 });
    assert!(c.problems.is_empty(), "{:?}", c.problems);
}

#[test]
fn a_phase_line_carries_the_mark_its_result_txt_line_carries() {
    // A 5 s test run: the writes are short, ior-easy-read measured 0, mdtest-easy-stat
    // counted I/O errors, find matched nothing and the unscored ior-rnd4K-easy-read
    // measured 0.
    let mut figs = figures();
    for f in figs.iter_mut() {
        let def = crate::io500::phases::phase(&f.name).unwrap();
        if def.is_write() {
            f.time = 5.2;
        }
        match f.name.as_str() {
            "ior-easy-read" | "ior-rnd4K-easy-read" => f.value = 0.0,
            "mdtest-easy-stat" => f.errors = 3,
            "find" => f.found = Some(0),
            _ => {}
        }
    }
    let dir = tempfile::tempdir().unwrap();
    write_result_dir(dir.path(), &config(5), &figs).unwrap();
    let text = std::fs::read_to_string(dir.path().join(RESULT_FILE)).unwrap();
    let written: Vec<&str> = text.lines().skip(1).take(figs.len()).collect();
    let printed: Vec<String> = figs.iter().map(phase_line).collect();
    assert_eq!(printed, written);
    let marked: Vec<&str> = figs
        .iter()
        .filter(|f| phase_line(f).ends_with(" [INVALID]"))
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(
        marked,
        [
            "ior-easy-write",
            "mdtest-easy-write",
            "ior-hard-write",
            "mdtest-hard-write",
            "find",
            "ior-easy-read",
            "mdtest-easy-stat",
        ]
    );
}

#[test]
fn a_default_result_dir_is_numbered_when_taken() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("io500-results/2025.01.02-03.04.05");
    let first = ResultDir::create(&dir, true).unwrap();
    assert_eq!(first.path, dir);
    let second = ResultDir::create(&dir, true).unwrap();
    assert_eq!(
        second.path,
        tmp.path().join("io500-results/2025.01.02-03.04.05-2")
    );
    let third = ResultDir::create(&dir, true).unwrap();
    assert_eq!(
        third.path,
        tmp.path().join("io500-results/2025.01.02-03.04.05-3")
    );
    // A directory a run made goes with it while empty, and stays once it holds a result.
    write_result_dir(&first.path, &config(300), &figures()).unwrap();
    let (kept, gone) = (first.path.clone(), third.path.clone());
    drop((first, third));
    assert!(kept.join(RESULT_FILE).exists());
    assert!(!gone.exists());
    assert!(second.path.is_dir());
    // A run refused before it wrote anything leaves no io500-results/ it made behind.
    let fresh = tmp
        .path()
        .join("elsewhere/io500-results/2025.01.02-03.04.05");
    drop(ResultDir::create(&fresh, true).unwrap());
    assert!(!tmp.path().join("elsewhere").exists());
}

#[test]
fn a_given_result_dir_must_be_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let given = tmp.path().join("given");
    std::fs::create_dir(&given).unwrap();
    let empty = ResultDir::create(&given, false).unwrap();
    assert_eq!(empty.path, given);
    drop(empty);
    assert!(given.is_dir(), "the user's directory stays");
    assert_eq!(std::fs::read_dir(&given).unwrap().count(), 0);

    std::fs::write(given.join(RESULT_FILE), "an earlier run\n").unwrap();
    assert_eq!(
        ResultDir::create(&given, false).unwrap_err().to_string(),
        format!(
            "--result-dir {} already holds files; give a new or empty directory (iolab never writes a result over another)",
            given.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(given.join(RESULT_FILE)).unwrap(),
        "an earlier run\n"
    );
    let file = given.join(RESULT_FILE);
    let e = ResultDir::create(&file, false).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "--result-dir {}: cannot create it: ",
            file.display()
        )),
        "{e}"
    );
}

/// phases.json says what result.txt says: a write phase shorter than the stonewall is
/// [INVALID] in result.txt and `"valid": false` in phases.json.
#[test]
fn phases_json_marks_the_phases_result_txt_marks_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let mut figs = figures();
    let short = figs
        .iter_mut()
        .find(|f| f.name == "ior-easy-write")
        .unwrap();
    short.time = 12.0;
    write_result_dir(dir.path(), &config(300), &figs).unwrap();
    let result = std::fs::read_to_string(dir.path().join(RESULT_FILE)).unwrap();
    let line = result
        .lines()
        .find(|l| l.contains("ior-easy-write"))
        .unwrap();
    assert!(line.ends_with("[INVALID]"), "{line}");
    let phases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(PHASES_FILE)).unwrap())
            .unwrap();
    for p in phases["phases"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap();
        let marked = result
            .lines()
            .any(|l| l.contains(&format!(" {name} ")) && l.ends_with("[INVALID]"));
        assert_eq!(p["valid"], !marked, "{name}");
    }
    assert_eq!(
        phases["phases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["valid"] == false)
            .count(),
        1
    );
}
