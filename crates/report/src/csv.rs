//! CSV for spreadsheets and pandas, with stable column names, written by the `csv` crate
//! (RFC 4180 quoting): [`render_csv`] has one row per phase × op with raw figures
//! (bytes/s, ops/s, nanoseconds) and the statistics of its figure of merit over the
//! phase's repetitions (n, mean, stddev, cv, ci95, noisy), [`render_points_csv`] one row
//! per sweep point × op with its repetition statistics, [`render_comparison_csv`] one row
//! per compared metric (scope "peak") and per metric and swept value (scope "point").

use iolab_core::result::{OpResult, PhaseResult, RunRecord};

use crate::aggregate::{Point, aggregate_runs};
use iolab_core::stats::Spread;

use crate::compare::{Comparison, MetricRow, Noise, Presence};
use crate::comparison_text::swept_rows;
use crate::measure::{Measure, params_text};
use crate::sweep::Params;

const PHASE_COLUMNS: &str = "run_id,label,phase,kind,repetition,params,swept_param,swept_value,\
op,measure,value,unit,ops,bytes,elapsed_s,bandwidth_bytes_per_s,iops,first_done_s,\
first_done_bandwidth_bytes_per_s,first_done_iops,errors,lat_count,lat_min_ns,lat_mean_ns,\
lat_p50_ns,lat_p90_ns,lat_p99_ns,lat_p99_9_ns,lat_p99_99_ns,lat_max_ns,n,mean,stddev,cv,ci95,\
noisy";

const POINT_COLUMNS: &str = "side,group,split,swept_param,swept_value,op,measure,unit,n,\
mean,stddev,cv,ci95,min,max,noisy,lat_p50_ns,lat_p99_ns,lat_p99_9_ns";

const COMPARISON_COLUMNS: &str = "metric,phase,split,op,measure,unit,swept_param,\
baseline,baseline_peak,baseline_at,baseline_n,baseline_cv,candidate,candidate_peak,\
candidate_at,candidate_n,candidate_cv,change_percent,noise,presence,scope";

/// A CSV document in memory, its header written.
struct Document(csv::Writer<Vec<u8>>);

impl Document {
    fn new(columns: &str) -> Document {
        let mut d = Document(csv::Writer::from_writer(Vec::new()));
        d.row(columns.split(','));
        d
    }

    fn row<I, F>(&mut self, fields: I)
    where
        I: IntoIterator<Item = F>,
        F: AsRef<[u8]>,
    {
        self.0
            .write_record(fields)
            .expect("writing CSV to memory cannot fail");
    }

    fn finish(self) -> String {
        let bytes = self
            .0
            .into_inner()
            .expect("flushing CSV to memory cannot fail");
        String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8")
    }
}

/// Params as "k=v;k=v" (semicolons keep the field unquoted).
fn params_field(p: &Params) -> String {
    params_text(p).replace(", ", ";")
}

/// One row per phase × op of every run, figures raw.
pub fn render_csv(runs: &[RunRecord]) -> String {
    let agg = aggregate_runs(runs);
    let mut out = Document::new(PHASE_COLUMNS);
    for (ri, run) in runs.iter().enumerate() {
        for (pi, phase) in run.phases.iter().enumerate() {
            let holds = |p: &Point| p.phases.iter().any(|r| r.phase == pi);
            let group = agg.groups.iter().find(|g| g.sides[ri].iter().any(holds));
            let point = group.and_then(|g| g.sides[ri].iter().find(|p| holds(p)));
            let swept = group.and_then(|g| g.swept.clone()).unwrap_or_default();
            let value = phase.params.get(&swept).cloned().unwrap_or_default();
            for o in &phase.ops {
                let measure = group
                    .and_then(|g| g.measure(o.op))
                    .unwrap_or(Measure::OpsRate);
                let mut row = phase_row(run, phase, o, measure, &swept, &value);
                // The figure of merit over this phase's repetitions (the phase among them).
                match point.and_then(|p| p.op(o.op)).map(|op| op.value) {
                    Some(s) => row.extend([
                        s.n.to_string(),
                        s.mean.to_string(),
                        s.stddev.to_string(),
                        s.cv.to_string(),
                        s.ci95.to_string(),
                        s.is_noisy().to_string(),
                    ]),
                    None => row.extend(std::iter::repeat_n(String::new(), 6)),
                }
                out.row(&row);
            }
        }
    }
    out.finish()
}

fn phase_row(
    run: &RunRecord,
    phase: &PhaseResult,
    o: &OpResult,
    measure: Measure,
    swept: &str,
    value: &str,
) -> Vec<String> {
    let l = &o.latency;
    let figure = match measure {
        Measure::Bandwidth => o.bandwidth.get(),
        _ => o.iops.get(),
    };
    vec![
        run.id.clone(),
        run.label.clone().unwrap_or_default(),
        phase.name.clone(),
        serde_json::to_value(phase.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        phase.repetition.to_string(),
        params_field(&phase.params),
        swept.to_string(),
        value.to_string(),
        o.op.name().to_string(),
        measure.word().to_string(),
        figure.to_string(),
        measure.unit().to_string(),
        o.ops.to_string(),
        o.bytes.get().to_string(),
        phase.elapsed.as_secs_f64().to_string(),
        o.bandwidth.get().to_string(),
        o.iops.get().to_string(),
        phase.first_done.as_secs_f64().to_string(),
        o.first_done_bandwidth.get().to_string(),
        o.first_done_iops.get().to_string(),
        o.errors.to_string(),
        l.count.to_string(),
        l.min.0.to_string(),
        l.mean.to_string(),
        l.p50.0.to_string(),
        l.p90.0.to_string(),
        l.p99.0.to_string(),
        l.p99_9.0.to_string(),
        l.p99_99.0.to_string(),
        l.max.0.to_string(),
    ]
}

/// One row per side × group × swept value × op: the repetitions' statistics.
pub fn render_points_csv(runs: &[RunRecord]) -> String {
    let agg = aggregate_runs(runs);
    let mut out = Document::new(POINT_COLUMNS);
    for g in &agg.groups {
        for (si, points) in g.sides.iter().enumerate() {
            for p in points {
                for o in &p.ops {
                    let measure = g.measure(o.op).unwrap_or(Measure::OpsRate);
                    let s = &o.value;
                    out.row([
                        agg.sides[si].name.clone(),
                        g.name.clone(),
                        params_field(&g.split),
                        g.swept.clone().unwrap_or_default(),
                        p.value.clone().unwrap_or_default(),
                        o.op.name().to_string(),
                        measure.word().to_string(),
                        measure.unit().to_string(),
                        s.n.to_string(),
                        s.mean.to_string(),
                        s.stddev.to_string(),
                        s.cv.to_string(),
                        s.ci95.to_string(),
                        s.min.to_string(),
                        s.max.to_string(),
                        s.is_noisy().to_string(),
                        o.latency.p50.0.to_string(),
                        o.latency.p99.0.to_string(),
                        o.latency.p99_9.0.to_string(),
                    ]);
                }
            }
        }
    }
    out.finish()
}

/// One row per metric: both peaks with where and how repeated, change, noise, presence
/// (scope "peak"); then one per metric and swept value both sides measured, the figures
/// at that value in the peak columns (scope "point").
pub fn render_comparison_csv(c: &Comparison) -> String {
    let mut out = Document::new(COMPARISON_COLUMNS);
    for r in &c.rows {
        let presence = match r.presence() {
            Presence::Both => "both",
            Presence::BaselineOnly => "baseline-only",
            Presence::CandidateOnly => "candidate-only",
        };
        let sides = [r.baseline.as_ref(), r.candidate.as_ref()]
            .map(|p| p.map(|p| (p.value, p.at.clone().unwrap_or_default(), &p.spread)));
        out.row(change_row(
            c,
            r,
            sides,
            (r.change_percent, r.noise),
            (presence, "peak"),
        ));
    }
    for r in swept_rows(c) {
        for p in &r.points {
            let presence = match (&p.baseline, &p.candidate) {
                (Some(_), None) => "baseline-only",
                (None, Some(_)) => "candidate-only",
                _ => "both",
            };
            let sides = [p.baseline.as_ref(), p.candidate.as_ref()]
                .map(|s| s.map(|s| (s.mean, p.at.clone(), s)));
            out.row(change_row(
                c,
                r,
                sides,
                (p.change_percent, p.noise),
                (presence, "point"),
            ));
        }
    }
    out.finish()
}

/// A side's figure in a row of [`render_comparison_csv`]: value, where, repetitions.
type SideFigure<'a> = Option<(f64, String, &'a Spread)>;

/// One row of [`render_comparison_csv`]: the metric, each side's name, figure, place,
/// n and CV, the change, noise, presence and scope.
fn change_row(
    c: &Comparison,
    r: &MetricRow,
    sides: [SideFigure<'_>; 2],
    (change, noise): (Option<f64>, Noise),
    (presence, scope): (&str, &str),
) -> Vec<String> {
    let mut fields = metric_fields(r);
    for (name, side) in [&c.baseline.name, &c.candidate.name].into_iter().zip(sides) {
        fields.push(name.clone());
        match side {
            None => fields.extend(std::iter::repeat_n(String::new(), 4)),
            Some((value, at, s)) => {
                fields.extend([value.to_string(), at, s.n.to_string(), s.cv.to_string()])
            }
        }
    }
    fields.push(change.map(|v| v.to_string()).unwrap_or_default());
    fields.push(
        serde_json::to_value(noise)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
    );
    fields.push(presence.to_string());
    fields.push(scope.to_string());
    fields
}

/// The columns naming a metric: metric, phase, split, op, measure, unit, swept_param.
fn metric_fields(r: &MetricRow) -> Vec<String> {
    vec![
        r.metric.clone(),
        r.phase.clone(),
        params_field(&r.split),
        r.op.name().to_string(),
        r.measure.word().to_string(),
        r.measure.unit().to_string(),
        r.swept.clone().unwrap_or_default(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_when_needed() {
        let mut d = Document::new("a,b,c");
        d.row(["plain", "a,b", "say \"hi\""]);
        d.row(["line\nbreak", "", "x"]);
        assert_eq!(
            d.finish(),
            "a,b,c\nplain,\"a,b\",\"say \"\"hi\"\"\"\n\"line\nbreak\",,x\n"
        );
        assert_eq!(PHASE_COLUMNS.split(',').count(), 36);
    }
}
