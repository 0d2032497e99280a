//! `iolab s3`: object storage workloads over S3 with warp's semantics: the phases of
//! --ops (put, get, stat, list, delete, mixed) against one or more endpoints, one
//! connection per worker, every rank its own objects under the run's prefix. The bucket
//! is checked before any load; the run's objects (and a bucket it made) are removed at
//! the end, also after a failure or Ctrl-C, unless --keep.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use iolab_backend::object::{ObjectBackend, ObjectError, S3Client, S3Options, TlsConfig};
use iolab_core::result::RunStatus;
use iolab_core::spec::S3Spec;
use iolab_core::spec::s3::credentials::{AccessSources, S3Access, resolve};
use iolab_engine::MonotonicClock;
use iolab_engine::{ObjectOptions, finish_s3, run_s3, start_s3};

use crate::args::OutputArgs;
use crate::commands::finish::conclude;
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

#[derive(Args, Debug)]
pub struct S3Args {
    #[command(flatten)]
    pub spec: S3Spec,

    /// Leave the run's objects (and its marker object) in the bucket.
    #[arg(long)]
    pub keep: bool,

    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn s3(args: S3Args) -> Result<u8> {
    Runtime::with(|rt| s3_in(rt, args))
}

/// The AWS shared files: AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE, else
/// ~/.aws/credentials and ~/.aws/config; read with the bounded reader.
fn aws_file(var: &str, default: &str) -> Result<Option<(String, String)>> {
    let path = match std::env::var_os(var) {
        Some(p) => PathBuf::from(p),
        None => match std::env::var_os("HOME") {
            Some(h) => PathBuf::from(h).join(".aws").join(default),
            None => return Ok(None),
        },
    };
    if !path.exists() {
        return Ok(None);
    }
    let text = iolab_core::input::read_text_within(&path, 1 << 20)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(Some((text, path.display().to_string())))
}

/// The endpoint, region and keys of this run, from the flags, the environment and the
/// AWS files.
pub fn access_for(spec: &S3Spec) -> Result<S3Access> {
    let credentials = aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials")?;
    let config = aws_file("AWS_CONFIG_FILE", "config")?;
    let env = |k: &str| std::env::var(k).ok();
    let access = resolve(
        spec,
        &AccessSources {
            env: &env,
            credentials: credentials.as_ref().map(|(t, n)| (t.as_str(), n.clone())),
            config: config.as_ref().map(|(t, n)| (t.as_str(), n.clone())),
        },
    )?;
    Ok(access)
}

/// The options every worker's client is made with.
pub fn client_options(spec: &S3Spec, access: &S3Access, output: &OutputArgs) -> Result<S3Options> {
    let tls = if access.endpoints.iter().any(|e| e.tls) {
        Some(TlsConfig::new(access.ca_cert.as_deref()).map_err(|e| {
            anyhow::anyhow!(
                "{}{e}",
                if access.ca_cert.is_some() {
                    "--ca-cert: "
                } else {
                    ""
                }
            )
        })?)
    } else {
        None
    };
    Ok(S3Options {
        endpoints: access.endpoints.clone(),
        bucket: spec.bucket.clone(),
        addressing: spec.addressing,
        region: access.region.clone(),
        access_key: access.access_key.clone(),
        secret_key: access.secret_key.clone(),
        session_token: access.session_token.clone(),
        tls,
        sign_payload: !spec.disable_sha256_payload,
        part_size: spec.part_size.map(|p| p.get()),
        part_concurrency: spec.part_concurrency,
        attempts: spec.attempts,
        // A request that blocks longer ends it: the stall watchdog names it first.
        io_timeout: output
            .stall_timeout()
            .filter(|d| !d.is_zero())
            .unwrap_or(std::time::Duration::from_secs(300))
            .max(std::time::Duration::from_secs(1)),
        seed: spec.seed,
        first_endpoint: 0,
    })
}

/// Worker `g`'s client: its own first endpoint (workers start spread over them) and
/// its own upload data.
pub(crate) fn client_of(
    client: &S3Options,
    seed: u64,
    g: u32,
) -> Result<Box<dyn ObjectBackend>, ObjectError> {
    let mut o = client.clone();
    o.first_endpoint = g as usize;
    o.seed = iolab_core::rng::mix(&[seed, u64::from(g)]);
    Ok(Box::new(S3Client::new(o)?))
}

/// What the engine needs to know of the clients: their memory and where they go.
pub(crate) fn object_options(client: &S3Options) -> ObjectOptions {
    ObjectOptions {
        backend_bytes: S3Client::memory_bytes(client.endpoints.len(), client.part_concurrency),
        endpoints: client.endpoints.iter().map(|e| e.url()).collect(),
        ..ObjectOptions::default()
    }
}

/// How a study's S3 phases reach their servers: resolved per phase from its spec, the
/// environment and the AWS files, as `iolab s3` does.
pub struct Connector<'a> {
    pub output: &'a OutputArgs,
}

impl iolab_suites::study::ObjectConnector for Connector<'_> {
    fn with_factory(
        &self,
        spec: &S3Spec,
        f: &mut iolab_suites::study::WithFactory<'_>,
    ) -> Result<Vec<iolab_core::result::PhaseResult>, iolab_engine::EngineError> {
        let setup = |e: anyhow::Error| iolab_engine::EngineError::Setup(format!("{e:#}"));
        let access = access_for(spec).map_err(setup)?;
        let client = client_options(spec, &access, self.output).map_err(setup)?;
        let factory = |g: u32| client_of(&client, spec.seed, g);
        f(&factory, &object_options(&client))
    }
}

fn s3_in(rt: &Runtime, args: S3Args) -> Result<u8> {
    let spec = args.spec;
    let client = rt.agree(
        spec.validate()
            .map_err(anyhow::Error::from)
            .and_then(|()| args.output.prepare(rt))
            .and_then(|()| access_for(&spec))
            .and_then(|a| client_options(&spec, &a, &args.output).map(|o| (o, a.source))),
    )?;
    let (client, source) = client;
    let factory = |g: u32| client_of(&client, spec.seed, g);
    let opts = object_options(&client);
    let endpoints = opts.endpoints.clone();
    let comm = rt.comm.as_ref();
    let (plan, made) = start_s3(comm, &spec, &factory, &opts)?;
    let mut sink = RunSink::start(
        rt,
        args.output.recording(),
        "s3",
        serde_json::to_value(&spec).context("recording the spec")?,
        format!("{} s3://{}", endpoints.join(","), spec.bucket),
        None,
    );
    sink.record
        .spec
        .as_object_mut()
        .map(|m| m.insert("credentials".into(), source.into()));
    let watch = Watch::new(&args.output, &sink, None);
    let progress = &watch.progress;
    let env = watch.env(rt);
    let outcome = run_s3(&env, &MonotonicClock, &plan, made, &factory, &opts);
    progress.finish();
    let warnings = finish_s3(comm, &outcome, &factory, args.keep);
    if rt.is_root() {
        for w in &warnings {
            eprintln!("iolab: {w}");
        }
    }
    let failed_setup = outcome.phases.is_empty() && outcome.stopped;
    sink.phases(outcome.phases);
    sink.record.warnings.extend(warnings);
    if failed_setup {
        sink.finish(RunStatus::Failed);
        anyhow::bail!("the run stopped before its first phase ended");
    }
    conclude(rt, sink, &args.output)
}
