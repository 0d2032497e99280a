//! fio's own example job files, and job files of the kinds users bring from guides and
//! generators, as a corpus: each is shrunk (sizes to 4 MiB, times to 1 s, numjobs to at
//! most 4, devices and absolute file names to 16 MiB files in a temporary directory)
//! and run by `iolab fio`. `tests/fixtures/fio-corpus/expected.txt` says of each file
//! whether it runs (with the number of report entries fio 3.33 prints for the same
//! shrunk file) or is refused naming an option; the files' origin and licence are in
//! that directory's README.md.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{Ran, iolab};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio-corpus")
}

/// The test's shrinking rules (the same as the README's for real fio).
fn shrink(text: &str, dir: &Path) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim();
        let kv = (!t.starts_with([';', '#', '[']))
            .then(|| t.split_once('='))
            .flatten();
        let Some((k, v)) = kv else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        let small = |n: u64| -> String {
            v.parse::<u64>()
                .map(|x| x.min(n).to_string())
                .unwrap_or_else(|_| v.to_string())
        };
        let v = match k {
            "size" | "filesize" | "io_size" | "io_limit" if !v.ends_with('%') => "4m".into(),
            "runtime" | "timeout" => "1".into(),
            "ramp_time" | "startdelay" => "0".into(),
            // Fill a 4 MiB file, not the file system.
            "fill_device" => "0\nsize=4m".into(),
            "numjobs" | "nrfiles" => small(4),
            "loops" => small(2),
            "directory" => dir.display().to_string(),
            "filename" => v
                .split(':')
                .map(|p| {
                    if !p.starts_with('/') {
                        return p.to_string();
                    }
                    let name = Path::new(p).file_name().unwrap_or_default();
                    let f = dir.join(name);
                    if !f.exists() {
                        std::fs::File::create(&f)
                            .and_then(|h| h.set_len(16 << 20))
                            .unwrap();
                    }
                    f.display().to_string()
                })
                .collect::<Vec<_>>()
                .join(":"),
            _ => v.to_string(),
        };
        out.push_str(&format!("{k}={v}\n"));
    }
    out
}

enum Expect {
    Runs(usize),
    Refused(String),
}

fn expectations() -> Vec<(String, Expect)> {
    let text = std::fs::read_to_string(corpus().join("expected.txt")).unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let parts: Vec<&str> = l.split_whitespace().collect();
            let e = match parts[1] {
                "runs" => Expect::Runs(parts[2].parse().unwrap()),
                "refused" => Expect::Refused(parts[2].to_string()),
                other => panic!("expected.txt: '{other}' in {l}"),
            };
            (parts[0].to_string(), e)
        })
        .collect()
}

#[test]
fn the_corpus_runs_or_is_refused_by_option_as_expected() {
    let (mut ran, mut refused) = (0, 0);
    let mut wrong = Vec::new();
    for (file, expect) in expectations() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let text = std::fs::read_to_string(corpus().join(&file)).unwrap();
        std::fs::write(dir.path().join("job.fio"), shrink(&text, dir.path())).unwrap();
        let r = Ran::from(
            iolab()
                .current_dir(dir.path())
                .args(["fio", "--no-store", "--output-format=json", "job.fio"])
                .output()
                .unwrap(),
        );
        match expect {
            Expect::Runs(n) => {
                let entries = serde_json::from_str::<Value>(&r.stdout)
                    .ok()
                    .and_then(|v| v["jobs"].as_array().map(Vec::len));
                if r.code == 0 && entries == Some(n) {
                    ran += 1;
                } else {
                    wrong.push(format!(
                        "{file}: expected to run with {n} entries, exit {} with {entries:?}: {}",
                        r.code,
                        r.stderr.lines().last().unwrap_or_default()
                    ));
                }
            }
            Expect::Refused(option) => {
                let lines: Vec<&str> = r
                    .stderr
                    .lines()
                    .filter(|l| l.starts_with("iolab: error"))
                    .collect();
                // fio's option ("[job] bssplit:"), or the iolab flag a check names.
                let names = lines.len() == 1 && lines[0].contains(&format!("{option}:"));
                if r.code == 2 && names {
                    refused += 1;
                } else {
                    wrong.push(format!(
                        "{file}: expected a refusal naming {option}, exit {}: {}",
                        r.code,
                        r.stderr.trim()
                    ));
                }
            }
        }
    }
    eprintln!("fio corpus: {ran} ran, {refused} refused by option");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
