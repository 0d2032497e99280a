//! `iolab train search`: the most accelerators that keep AU at the threshold, found by
//! trials of growing size (MLPerf Storage's headline), each trial's epochs stored.

use anyhow::Result;
use iolab_comm::CommExt;
use iolab_core::SpecError;
use iolab_core::result::PhaseResult;
use iolab_core::spec::TrainConfig;
use iolab_engine::ranks_on_this_host;
use iolab_suites::AiError;
use iolab_suites::train::search::{SearchResult, search};
use iolab_suites::train::{LiveStep, train_epochs};

use super::{
    SearchArgs, check_memory, drop_caches, hooks, live_step, prepare, quiet, spec_json, stored_as,
};
use crate::commands::finish::conclude;
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;
use iolab_report::train::render_train_search;

pub(super) fn search_in(rt: &Runtime, args: SearchArgs) -> Result<u8> {
    let (cfg, dataset, _) = prepare(rt, &args.spec, &args.output)?;
    let mut sink = RunSink::start(
        rt,
        &args.output.store,
        "train-search",
        spec_json(&args.spec, &cfg),
        dataset.dir.display().to_string(),
        Some(&dataset.dir),
        args.output.label.clone(),
    );
    let watch = Watch::new(&args.output, &sink, None);
    let env = watch.env(rt);
    let ranks = u64::from(rt.comm.size());
    let mut phases: Vec<PhaseResult> = Vec::new();
    let threshold = cfg.au_threshold;
    let result: Result<SearchResult, AiError> = search(u64::from(args.max), 1, threshold, |n| {
        if rt.interrupted() {
            return Err(AiError::Interrupted);
        }
        let trial = TrainConfig {
            accelerators: n as u32,
            ..cfg.clone()
        };
        if trial.steps_per_epoch(n * ranks) == 0 {
            return Err(AiError::Spec(SpecError::new(
                "--max",
                format!(
                    "the dataset has less than one batch for each of {} accelerators: add files or lower --max",
                    n * ranks
                ),
            )));
        }
        check_memory(&trial, &dataset, ranks_on_this_host(rt.comm.as_ref()))?;
        if args.drop_caches {
            drop_caches(rt);
        }
        let on_step = |s: &LiveStep| live_step("", s);
        let hooks = hooks(rt, &args.output, env.probe, &on_step);
        let o = train_epochs(rt.comm.as_ref(), &dataset, &trial, &hooks)?;
        for mut p in o.phases {
            p.name = format!("search-{}acc-{}", n * ranks, p.name);
            p.params
                .insert("search_accelerators".into(), (n * ranks).to_string());
            phases.push(p);
        }
        let v = rt
            .comm
            .broadcast(
                0,
                &(o.figures.au_mean_percent, o.figures.samples_per_sec_mean),
            )
            .map_err(|e| AiError::Setup(e.to_string()))?;
        Ok(v)
    });
    watch.progress.finish();
    for p in phases {
        sink.phase(p);
    }
    let r = match settle(result, &sink.record.phases, threshold, ranks) {
        Ok(r) => r,
        Err(e) => return sink.end_on(rt.is_root(), e),
    };
    if rt.is_root() && !args.output.quiet {
        print!("{}", render_train_search(&r, threshold, ranks));
    }
    sink.annotate("search", serde_json::to_value(&r)?);
    stored_as(rt, &sink, &args.output);
    conclude(rt, sink, &quiet(&args.output))
}

/// The search's points from its stored trials (when a limit cut it short).
fn rebuild(phases: &[PhaseResult], threshold: f64, stopped: String, ranks: u64) -> SearchResult {
    let mut by_n: std::collections::BTreeMap<u64, Vec<(f64, f64)>> = Default::default();
    for p in phases {
        let n = p
            .params
            .get("search_accelerators")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let f = p.figures.as_ref().and_then(|f| f.train_epoch());
        let au = f.map_or(0.0, |f| f.au_percent);
        let tp = f.map_or(0.0, |f| f.samples_per_sec);
        by_n.entry(n).or_default().push((au, tp));
    }
    let points: Vec<_> = by_n
        .into_iter()
        .map(|(n, v)| {
            let au = v.iter().map(|x| x.0).sum::<f64>() / v.len() as f64;
            let tp = v.iter().map(|x| x.1).sum::<f64>() / v.len() as f64;
            iolab_suites::train::search::SearchPoint {
                accelerators: n / ranks.max(1),
                au_percent: au,
                samples_per_sec: tp,
                passed: au >= threshold,
            }
        })
        .collect();
    let best = points
        .iter()
        .filter(|p| p.passed)
        .map(|p| p.accelerators)
        .max();
    SearchResult {
        points,
        best,
        stopped,
    }
}

/// The search's result: a dataset or memory limit that stopped the climb after some
/// trials reports what was found, rebuilt from the stored trials when it holds none.
fn settle(
    result: Result<SearchResult, AiError>,
    phases: &[PhaseResult],
    threshold: f64,
    ranks: u64,
) -> Result<SearchResult, AiError> {
    let r = match result {
        Ok(r) => r,
        Err(AiError::Spec(e)) if !phases.is_empty() => SearchResult {
            stopped: e.to_string(),
            best: None,
            points: Vec::new(),
        },
        Err(e) => return Err(e),
    };
    Ok(if r.points.is_empty() && !phases.is_empty() {
        rebuild(phases, threshold, r.stopped, ranks)
    } else {
        r
    })
}
