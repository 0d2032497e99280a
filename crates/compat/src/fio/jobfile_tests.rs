use std::collections::BTreeMap;

use super::*;

/// Environment, host values and files for the parser, held in memory.
#[derive(Default)]
pub(crate) struct Fake {
    pub env: BTreeMap<String, String>,
    pub files: BTreeMap<String, String>,
}

impl Sources for Fake {
    fn env(&self, name: &str) -> Option<String> {
        self.env.get(name).cloned()
    }
    fn host_value(&self, name: &str) -> Option<u64> {
        match name {
            "ncpus" => Some(2),
            "pagesize" => Some(4096),
            "mb_memory" => Some(24_000),
            _ => None,
        }
    }
    fn include(&mut self, from: &str, path: &str) -> Result<String, FioError> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| FioError::at(from, format!("include {path}: no such file")))
    }
}

const S3: &str = "\
; S3's job, as the study gives it
[global]
rw=randrw
rwmixread=90
bs=4k
direct=1
thread
iodepth=8
numjobs=8
time_based
runtime=${RUNTIME}
group_reporting

[mix-90]

[mix-70]
stonewall
rwmixread=70
";

#[test]
fn globals_apply_to_every_job_and_job_options_come_after() {
    let mut src = Fake::default();
    src.env.insert("RUNTIME".into(), "900".into());
    let jobs = parse_job_file("s3.fio", S3, &mut src).unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].name, "mix-90");
    assert_eq!(jobs[0].options.len(), 10);
    let runtime = jobs[0].options.iter().find(|o| o.key == "runtime").unwrap();
    assert_eq!(runtime.value.as_deref(), Some("900"));
    assert_eq!(runtime.at, "s3.fio:11");
    let thread = jobs[0].options.iter().find(|o| o.key == "thread").unwrap();
    assert_eq!(thread.value, None);
    let last = jobs[1].options.last().unwrap();
    assert_eq!(
        (last.key.as_str(), last.value.as_deref()),
        ("rwmixread", Some("70"))
    );
    assert_eq!(jobs[1].at, "s3.fio:16");
}

#[test]
fn a_later_global_changes_only_later_jobs() {
    let text = "[global]\nbs=4k\n[a]\n[global]\nbs=1m\n[b]\n";
    let jobs = parse_job_file("j.fio", text, &mut Fake::default()).unwrap();
    let bs = |j: &Section| {
        j.options
            .iter()
            .rev()
            .find(|o| o.key == "bs")
            .unwrap()
            .value
            .clone()
    };
    assert_eq!(bs(&jobs[0]).as_deref(), Some("4k"));
    assert_eq!(bs(&jobs[1]).as_deref(), Some("1m"));
}

#[test]
fn includes_and_host_values_are_read() {
    let mut src = Fake::default();
    src.files.insert(
        "common.fio".into(),
        "[global]\nnumjobs=$ncpus\nsize=${SIZE}\n".into(),
    );
    src.env.insert("SIZE".into(), "64m".into());
    let jobs = parse_job_file("j.fio", "include common.fio\n[a]\nrw=read\n", &mut src).unwrap();
    let opts: Vec<(&str, Option<&str>)> = jobs[0]
        .options
        .iter()
        .map(|o| (o.key.as_str(), o.value.as_deref()))
        .collect();
    assert_eq!(
        opts,
        [
            ("numjobs", Some("2")),
            ("size", Some("64m")),
            ("rw", Some("read"))
        ]
    );
    assert_eq!(jobs[0].options[0].at, "common.fio:2");
}

#[test]
fn malformed_files_name_the_line() {
    let err = |text: &str| {
        parse_job_file("bad.fio", text, &mut Fake::default())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err("[global\nbs=4k\n"),
        "bad.fio:1: section header '[global' has no closing ']'"
    );
    assert_eq!(
        err("bs=4k\n[a]\n"),
        "bad.fio:1: 'bs=4k' comes before any [section]; put it under [global] or a [job]"
    );
    assert_eq!(
        err("[a]\n=4k\n"),
        "bad.fio:2: '=4k' has no option name before '='"
    );
    assert_eq!(
        err("[a]\nbs 4k\n"),
        "bad.fio:2: 'bs 4k' is not an option: use key=value"
    );
    assert_eq!(
        err("[a]\nsize=${NOPE}\n"),
        "bad.fio:2: '${NOPE}': the environment variable NOPE is not set"
    );
    assert_eq!(
        err("[a]\ninclude missing.fio\n"),
        "bad.fio:2: include missing.fio: no such file"
    );
    assert_eq!(
        err("[]\n"),
        "bad.fio:1: a section header needs a name: [global] or [jobname]"
    );
}

#[test]
fn an_include_loop_ends_with_an_error() {
    let mut src = Fake::default();
    src.files
        .insert("self.fio".into(), "include self.fio\n".into());
    let e = parse_job_file("self.fio", "include self.fio\n", &mut src).unwrap_err();
    assert!(e.message.contains("nest deeper than 8"), "{e}");
}

/// fio's strip_blank_end: a comment may follow an option (fio's surface-scan.fio).
#[test]
fn a_comment_after_an_option_is_left_out() {
    let text = "[w]\nfilename=datafile.tmp\t; or use a full disk\nbs=64k # the size\n";
    let jobs = parse_job_file("s.fio", text, &mut Fake::default()).unwrap();
    let values: Vec<Option<&str>> = jobs[0].options.iter().map(|o| o.value.as_deref()).collect();
    assert_eq!(values, [Some("datafile.tmp"), Some("64k")]);
}
