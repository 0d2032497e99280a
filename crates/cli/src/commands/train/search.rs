//! `iolab train search`: the most accelerators that keep AU at the threshold, found by
//! trials of growing size (MLPerf Storage's headline), each trial's epochs stored.

use anyhow::Result;
use iolab_engine::ranks_on_this_host;
use iolab_suites::train::search::{SearchPlan, run_search};
use iolab_suites::train::{LiveStep, train_epochs};

use super::{SearchArgs, drop_caches, hooks, live_step, prepare, quiet, spec_json, stored_as};
use crate::commands::finish::conclude;
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;
use iolab_report::train::render_train_search;

pub(super) fn search_in(rt: &Runtime, args: SearchArgs) -> Result<u8> {
    let super::Prepared {
        cfg, dataset, host, ..
    } = prepare(rt, &args.spec, &args.output)?;
    let mut sink = RunSink::start(
        rt,
        args.output.recording(),
        "train-search",
        spec_json(&args.spec, &cfg),
        dataset.dir.display().to_string(),
        Some(&dataset.dir),
    );
    let watch = Watch::new(&args.output, &sink, None);
    let env = watch.env(rt);
    let ranks = u64::from(rt.comm.size());
    let plan = SearchPlan {
        comm: rt.comm.as_ref(),
        dataset: &dataset,
        cfg: &cfg,
        max: args.max,
        ranks_on_host: ranks_on_this_host(rt.comm.as_ref()),
        host,
        interrupt: rt.interrupt,
    };
    let (result, phases) = run_search(&plan, &mut |trial| {
        if args.drop_caches {
            drop_caches(rt);
        }
        let on_step = |s: &LiveStep| live_step("", s);
        let hooks = hooks(rt, &args.output, env.probe, &on_step);
        train_epochs(rt.comm.as_ref(), &dataset, trial, &hooks)
    });
    watch.progress.finish();
    for p in phases {
        sink.phase(p);
    }
    let r = match result {
        Ok(r) => r,
        Err(e) => return sink.end_on(rt.is_root(), e),
    };
    let threshold = cfg.au_threshold;
    if rt.is_root() && !args.output.quiet {
        print!("{}", render_train_search(&r, threshold, ranks));
    }
    sink.annotate("search", serde_json::to_value(&r)?);
    stored_as(rt, &sink, &args.output);
    conclude(rt, sink, &quiet(&args.output))
}
