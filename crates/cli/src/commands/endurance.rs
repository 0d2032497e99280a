//! `iolab endurance`: will a device last? The data a write rate amounts to over a period
//! against the device's rated endurance (TBW/PBW, or DWPD over a warranty), with the
//! rate given or taken from a stored run.

use anyhow::{Context, Result, bail};
use clap::Args;
use iolab_core::endurance::{parse_rate, parse_rated, project, rated_from_dwpd, run_write_rate};
use iolab_core::units::{ByteCount, BytesPerSec};

use crate::args::DbArgs;
use crate::exit;

#[derive(Args, Debug)]
pub struct EnduranceArgs {
    /// Rated endurance: total bytes written, e.g. 2.61PBW, 600TBW.
    #[arg(long, value_name = "BYTES", conflicts_with = "dwpd")]
    pub rated: Option<String>,

    /// Rated drive writes per day (with --capacity and --warranty-years).
    #[arg(long, requires = "capacity")]
    pub dwpd: Option<f64>,

    /// Device capacity, for --dwpd (2TB, 3.84TB).
    #[arg(long)]
    pub capacity: Option<ByteCount>,

    /// Warranty period the DWPD rating covers, in years.
    #[arg(long, default_value_t = 5.0)]
    pub warranty_years: f64,

    /// Write rate the device will see: 100MiB/s.
    #[arg(long, value_name = "RATE", conflicts_with = "from_run")]
    pub write_rate: Option<String>,

    /// Take the write rate a stored run measured (id or label): every byte its phases wrote
    /// over the time they ran (its mean, not its peak).
    #[arg(long, value_name = "RUN")]
    pub from_run: Option<String>,

    /// The period to project over, in 365-day years.
    #[arg(long, default_value_t = 5.0)]
    pub years: f64,

    /// Print JSON.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub store: DbArgs,
}

pub fn endurance(args: EnduranceArgs) -> Result<u8> {
    years("--years", args.years)?;
    let rated = rated_of(&args)?;
    let (rate, source, warnings) = write_rate_of(&args)?;
    let p = project(rated, rate, args.years);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "projection": p, "lasts": p.lasts(), "rate_source": source, "warnings": warnings })
            )?
        );
        return Ok(exit::OK);
    }
    print!(
        "{}",
        iolab_report::endurance::endurance_text(&p, &source, &warnings, args.capacity)
    );
    Ok(exit::OK)
}

/// The rated endurance: --rated, or --dwpd over --capacity and --warranty-years; more
/// than 0 bytes.
fn rated_of(args: &EnduranceArgs) -> Result<ByteCount> {
    let rated = match (&args.rated, args.dwpd, args.capacity) {
        (Some(r), _, _) => parse_rated(r).map_err(|e| anyhow::anyhow!("--rated: {e}"))?,
        (None, Some(d), Some(c)) => {
            if !(d.is_finite() && d > 0.0) {
                bail!("--dwpd: {d} is not a number of drive writes per day above 0");
            }
            years("--warranty-years", args.warranty_years)?;
            rated_from_dwpd(d, c, args.warranty_years).with_context(|| {
                format!(
                    "--dwpd {d} x --capacity {} x --warranty-years {} rates 16 EiB or more; \
                     check the figures",
                    c.human(),
                    args.warranty_years
                )
            })?
        }
        _ => bail!("give the rated endurance: --rated 2.61PBW, or --dwpd N --capacity SIZE"),
    };
    if rated.get() == 0 {
        match args.rated {
            Some(_) => bail!("--rated: must be more than 0 bytes"),
            None => bail!("--dwpd and --capacity: the rating must be more than 0 bytes"),
        }
    }
    Ok(rated)
}

/// The write rate, where it came from ("given", or the run), and what the run warned of.
fn write_rate_of(args: &EnduranceArgs) -> Result<(BytesPerSec, String, Vec<String>)> {
    Ok(match (&args.write_rate, &args.from_run) {
        (Some(r), _) => {
            let rate = parse_rate(r).map_err(|e| anyhow::anyhow!("--write-rate: {e}"))?;
            // Nothing written never wears a device out: no lifetime to project.
            if rate.get() <= 0.0 {
                bail!("--write-rate: must be more than 0 B/s");
            }
            (rate, "given".to_string(), Vec::new())
        }
        (None, Some(run)) => from_run(&args.store, run)?,
        _ => bail!("give the write rate: --write-rate 100MiB/s, or --from-run RUN"),
    })
}

/// Refuses a period that is not a number of years above 0 and up to 1000 (NaN, inf or
/// 1e30 years only print nonsense).
fn years(option: &str, years: f64) -> Result<()> {
    if !(years > 0.0 && years <= 1000.0) {
        bail!("{option}: {years} is not a number of years above 0 and at most 1000");
    }
    Ok(())
}

/// The mean write rate of a stored run (core's [`run_write_rate`]), refused when it
/// wrote nothing.
fn from_run(store: &DbArgs, reference: &str) -> Result<(BytesPerSec, String, Vec<String>)> {
    let store = store.open()?;
    let id = store.resolve(reference)?;
    let run = store
        .load_run(id)
        .with_context(|| format!("loading run {id}"))?;
    let Some(r) = run_write_rate(&run, &id.to_string()) else {
        bail!("--from-run: run {id} wrote nothing; give the rate with --write-rate");
    };
    Ok((r.rate, r.source, r.warnings))
}
