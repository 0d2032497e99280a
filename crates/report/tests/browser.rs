//! End to end in a browser: renders the fixture report (v7.4 against v7.3) to a file,
//! opens it in headless Chromium, and checks the DOM Chromium built (every chart there,
//! with its series, points and legend entries) and that a screenshot is not blank.
//! Without Chromium on PATH the test says so loudly and passes.

mod chromium;
mod fixtures;
mod svg;

use std::path::Path;

use chromium::{chromium, run_chromium, skip_without_chromium};

use iolab_report::{ReportOptions, render_html};

/// Share of pixels that are not near-white, and the number of distinct colours.
fn ink(png_path: &Path) -> (f64, usize) {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png_path).expect("the screenshot"),
    ));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("a buffer size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    let mut colours = std::collections::BTreeSet::new();
    let mut inked = 0usize;
    let total = pixels.len() / channels;
    for px in pixels.chunks(channels) {
        let rgb = [px[0], px[1 % channels], px[2 % channels]];
        if rgb.iter().any(|c| *c < 235) {
            inked += 1;
        }
        if colours.len() < 10_000 {
            colours.insert(rgb);
        }
    }
    (inked as f64 / total as f64, colours.len())
}

#[test]
fn report_renders_its_charts_in_chromium() {
    let Some(chromium) = chromium() else {
        return skip_without_chromium();
    };
    let runs = fixtures::report_runs();
    let opts = ReportOptions {
        comparison: iolab_report::default_comparison(&runs),
        ..ReportOptions::default()
    };
    let html = render_html(&runs, &opts);
    let expected = svg::charts(&html);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-browser");
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("report.html");
    std::fs::write(&page, &html).unwrap();

    let dom = run_chromium(&chromium, &page, &["--dump-dom".to_string()]);
    check_dom(&dom, &expected);
    check_screenshot(&chromium, &page, &dir.join("report.png"));
}

/// The DOM Chromium built holds every chart as rendered, with its series and legend.
fn check_dom(dom: &str, expected: &[svg::SvgChart]) {
    let seen = svg::charts(dom);
    assert_eq!(seen.len(), expected.len(), "charts in the DOM");
    for (s, e) in seen.iter().zip(expected) {
        assert_eq!(s.kind, e.kind);
        assert_eq!(s.title, e.title);
        assert_eq!(s.series, e.series, "{}", e.title);
        assert_eq!(s.legend, e.legend, "{}", e.title);
        assert_eq!(s.x_ticks, e.x_ticks, "{}", e.title);
        assert_eq!(s.y_ticks, e.y_ticks, "{}", e.title);
    }
    let kinds = |k: &str| seen.iter().filter(|c| c.kind == k).count();
    assert_eq!(kinds("sweep"), 5);
    assert_eq!(
        kinds("metadata"),
        4,
        "create, stat, remove and mkdir, one chart each"
    );
    assert_eq!(kinds("latency-percentiles"), 9);
    assert_eq!(kinds("latency-iops"), 3);
    assert_eq!(kinds("timeline"), 5);
    assert_eq!(kinds("device-throughput"), 1);
    assert_eq!(kinds("device-queue"), 1);
    assert_eq!(kinds("device-await"), 1);
    let seq_write = seen.iter().find(|c| c.kind == "sweep").unwrap();
    assert_eq!(seq_write.legend, ["write · v7.4", "write · v7.3"]);
    assert!(
        seq_write
            .series
            .iter()
            .all(|(_, points, drawn)| *points == 4 && *drawn == 4)
    );
    let meta = seen.iter().find(|c| c.kind == "metadata").unwrap();
    assert_eq!(meta.legend, ["create · v7.4", "create · v7.3"]);
    assert!(dom.contains("randread-4KiB read IOPS peak: 42% lower"));
}

/// A screenshot of the top of the page is far from blank.
fn check_screenshot(chromium: &Path, page: &Path, shot: &Path) {
    let _ = std::fs::remove_file(shot);
    run_chromium(
        chromium,
        page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000".to_string(),
        ],
    );
    let (share, colours) = ink(shot);
    eprintln!(
        "screenshot {}: {:.1}% inked, {colours} colours",
        shot.display(),
        share * 100.0
    );
    assert!(share > 0.03, "the screenshot is nearly blank ({share})");
    assert!(colours > 50, "the screenshot has only {colours} colours");
}
