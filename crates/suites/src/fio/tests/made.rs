//! The files a fio run makes: a job's missing `filename` made before its phase (its
//! size, what is said), removed at the end unless kept or written since, and refused in
//! one line naming the phase's jobs when it may not or cannot be made.

use super::*;

#[test]
fn a_missing_filename_is_made_for_its_phase_and_removed_unless_kept() {
    for keep in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("img");
        let f = format!("--filename={}", img.display());
        let p = plans(&[&f, "--size=64k", "--bs=4k", "--name=a", "--rw=read"]);
        let mut seen = Seen::default();
        let done = run(&p, keep, &mut seen).unwrap();
        assert_eq!(figures(&done), [("a", "0", 16, 65536)]);
        let mut said = vec![format!(
            "[a] {} did not exist: made it (65536 bytes, laid out in full for reading) as fio does; it is iolab's own image from now on",
            img.display()
        )];
        if keep {
            said.push(format!("kept {} (iolab's image)", img.display()));
            assert_eq!(std::fs::metadata(&img).unwrap().len(), 65536);
        } else {
            assert!(!img.exists());
        }
        assert_eq!(seen.said(), said);
    }
}

#[test]
fn an_image_written_since_iolab_made_it_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("img");
    let f = format!("--filename={}", img.display());
    let p = plans(&[&f, "--size=64k", "--name=a", "--rw=write"]);
    let seen = Seen::default();
    harness(&p, false, &seen, |jobs, hooks| {
        let run = Run::new(jobs, hooks);
        let made = Mutex::new(Vec::new());
        images::make_missing(&run, &[0], &made).unwrap();
        assert_eq!(*made.lock().unwrap(), std::slice::from_ref(&img));
        assert_eq!(std::fs::read(&img).unwrap(), vec![0u8; 65536]);
        std::fs::write(&img, "someone else's").unwrap();
        images::remove_made(&run, &made);
    });
    assert_eq!(std::fs::read(&img).unwrap(), b"someone else's");
    assert_eq!(
        seen.said()[1],
        format!(
            "left {}: it changed since iolab wrote it, so it is not removed",
            img.display()
        )
    );
    assert!(seen.said()[0].contains("(65536 bytes, preallocated for writing)"));
}

#[test]
fn a_made_image_holds_the_offset_and_every_clones_region() {
    let path = Path::new("/nonexistent/img");
    let needed = |args: &[&str]| {
        let mut all = vec!["--filename=/nonexistent/img", "--rw=write", "--name=a"];
        all.extend(args);
        images::needed(&plans(&all)[0], path).unwrap()
    };
    assert_eq!(needed(&["--size=96k"]), 96 << 10);
    assert_eq!(needed(&["--size=96k", "--offset=8k"]), 104 << 10);
    // A shared file holds every clone's 96 KiB: 288 KiB after the offset, which holds
    // three regions 64 KiB apart (the last ends at 128 + 96 KiB)...
    let clones = ["--size=96k", "--offset=8k", "--numjobs=3"];
    let spread = |increment: &str| {
        let mut args = clones.to_vec();
        args.push(increment);
        needed(&args)
    };
    assert_eq!(needed(&clones), (8 + 288) << 10);
    assert_eq!(spread("--offset_increment=64k"), (8 + 288) << 10);
    // ...but not three 256 KiB apart: the last ends at 8 + 512 + 96 KiB.
    assert_eq!(spread("--offset_increment=256k"), (8 + 512 + 96) << 10);
}

/// A run's error in one line: it, then each of its sources after a colon.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[test]
fn a_file_that_cannot_be_made_is_refused_naming_the_phases_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("img");
    let f = format!("--filename={}", img.display());
    let d = dir_arg(dir.path());
    let cases: [(&[&str], &str); 3] = [
        (
            &["--size=50%"],
            "50% is a share of IMG, which does not exist: give a size in bytes so iolab can create it as fio does",
        ),
        (
            &[],
            "is needed to create IMG, which does not exist (fio needs it too)",
        ),
        (
            &["--size=64k", "--allow_file_create=0"],
            "0: IMG does not exist and may not be made (fio fails the job with ENOENT; nothing was run)",
        ),
    ];
    for (options, why) in cases {
        let mut args = vec![f.as_str(), "--name=a", "--rw=write"];
        args.extend(options);
        // A job beside it in the same phase, which never runs either.
        args.extend([
            d.as_str(),
            "--name=b",
            "--rw=write",
            "--size=4k",
            "--filename=b",
        ]);
        let mut seen = Seen::default();
        let Err(err) = run(&plans(&args), false, &mut seen) else {
            panic!("{args:?} ran");
        };
        let why = why.replace("IMG", &img.display().to_string());
        let text = chain(&err);
        assert!(text.starts_with("jobs a, b: "), "{text}");
        assert!(text.ends_with(&why), "{text}");
        assert!(!img.exists());
        assert!(seen.cleaned().is_empty() && seen.phases.is_empty());
    }
}

#[test]
fn verify_only_on_a_missing_file_has_nothing_to_check() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("img");
    let f = format!("--filename={}", img.display());
    #[rustfmt::skip]
    let p = plans(&[
        &f, "--size=64k", "--name=a", "--rw=write", "--verify=crc32c", "--verify_only",
    ]);
    let Err(err) = run(&p, false, &mut Seen::default()) else {
        panic!("verify_only ran on a missing file");
    };
    let FioRunError::InJobs { jobs, source } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(jobs, "job a");
    assert!(
        matches!(
            &**source,
            FioRunError::VerifyOnly(EngineError::NothingToVerify { path, .. }) if *path == img
        ),
        "{source:?}"
    );
    assert!(!img.exists());
}
