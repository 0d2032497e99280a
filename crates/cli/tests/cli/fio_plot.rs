//! fio-plot (PyPI `fio-plot`) draws iolab's JSON and logs as it draws fio's for the same
//! job: bench/fio_plot.py runs both tools, renders fio-plot's bar and log graphs from
//! each, and compares the series' shape. scripts/test.sh installs fio-plot into
//! `$HOME/.cache/iolab-test/fioplot`; without it the test fails in CI and skips,
//! saying so, elsewhere.

use std::path::{Path, PathBuf};
use std::process::Command;

fn fio_plot() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IOLAB_FIO_PLOT") {
        return Some(PathBuf::from(p));
    }
    let home = std::env::var_os("HOME")?;
    let p = Path::new(&home).join(".cache/iolab-test/fioplot/bin/fio-plot");
    p.exists().then_some(p)
}

#[test]
fn fio_plot_draws_iolab_output_as_fios() {
    let in_ci = std::env::var_os("CI").is_some() || std::env::var_os("IOLAB_TEST_SUITE").is_some();
    let (Some(plot), true) = (fio_plot(), crate::common::on_path("fio", "--version")) else {
        assert!(
            !in_ci,
            "fio-plot or fio is missing: scripts/test.sh installs them"
        );
        eprintln!("skipping: fio-plot (or fio) is not installed; scripts/test.sh installs it");
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/fio_plot.py");
    let out = Command::new("python3")
        .arg(script)
        .args(["--iolab", env!("CARGO_BIN_EXE_iolab"), "--runtime", "2"])
        .arg("--fio-plot")
        .arg(plot)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("fio-plot drew iolab's output as fio's"),
        "{text}"
    );
}
