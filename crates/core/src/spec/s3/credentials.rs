//! Where an S3 workload's endpoint, region and keys come from, as the AWS tools decide
//! it: the command line, then the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
//! AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_CA_BUNDLE,
//! AWS_PROFILE), then the profile in the shared credentials and config files
//! (`~/.aws/credentials`, `~/.aws/config`, or AWS_SHARED_CREDENTIALS_FILE and
//! AWS_CONFIG_FILE). [`resolve`] is pure: the caller reads the files and the
//! environment. [`S3Access`] holds the secret and is never serialized or stored.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::SpecError;
use crate::spec::s3::{S3Endpoint, S3Spec};

/// Everything a client needs to reach the service. The secret key stays in memory only:
/// `Debug` does not print it and runs store only [`S3Access::source`].
#[derive(Clone, PartialEq, Eq)]
pub struct S3Access {
    pub endpoints: Vec<S3Endpoint>,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
    pub session_token: Option<String>,
    pub ca_cert: Option<PathBuf>,
    /// Where the keys came from: "environment", "profile default (credentials file)".
    pub source: String,
}

impl std::fmt::Debug for S3Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Access")
            .field("endpoints", &self.endpoints)
            .field("region", &self.region)
            .field("access_key", &self.access_key)
            .field("secret_key", &"<hidden>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<hidden>"),
            )
            .field("ca_cert", &self.ca_cert)
            .field("source", &self.source)
            .finish()
    }
}

/// The sections of an AWS ini file: `[name]` (credentials) or `[profile name]` (config;
/// `[default]` stays `default`), each a map of lowercase keys. Nested blocks (`s3 =`
/// followed by indented `key = value` lines) are kept as `s3.key`.
pub fn parse_aws_ini(text: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut section: Option<String> = None;
    let mut nested: Option<String> = None;
    for raw in text.lines() {
        let indented = raw.starts_with([' ', '\t']);
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.trim();
            let name = name.strip_prefix("profile ").map(str::trim).unwrap_or(name);
            section = Some(name.to_string());
            nested = None;
            out.entry(name.to_string()).or_default();
            continue;
        }
        let Some(sec) = &section else { continue };
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
        let map = out.entry(sec.clone()).or_default();
        if indented && let Some(n) = &nested {
            map.insert(format!("{n}.{k}"), v);
        } else if v.is_empty() {
            nested = Some(k);
        } else {
            nested = None;
            map.insert(k, v);
        }
    }
    out
}

/// The inputs [`resolve`] reads besides the spec.
pub struct AccessSources<'a> {
    /// Looks up an environment variable.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// The shared credentials file's text and name, if there is one.
    pub credentials: Option<(&'a str, String)>,
    /// The config file's text and name, if there is one.
    pub config: Option<(&'a str, String)>,
}

/// An AWS ini file parsed: sections by name, each a map of keys.
type Ini = BTreeMap<String, BTreeMap<String, String>>;

/// One profile's section of a file, with the file's name.
type Section<'a> = (&'a BTreeMap<String, String>, &'a String);

/// The profile in use: its name and its sections in the credentials and config files.
struct Profile<'a> {
    name: String,
    creds: Option<Section<'a>>,
    config: Option<Section<'a>>,
}

impl Profile<'_> {
    /// A key's value, the credentials file's before the config file's.
    fn get(&self, key: &str) -> Option<String> {
        self.creds
            .and_then(|(p, _)| p.get(key).cloned())
            .or_else(|| self.config.and_then(|(p, _)| p.get(key).cloned()))
            .filter(|v| !v.is_empty())
    }

    /// The name of the file a key is read from.
    fn file_of(&self, key: &str) -> String {
        if self.creds.is_some_and(|(p, _)| p.contains_key(key)) {
            self.creds.map(|(_, n)| n.clone()).unwrap_or_default()
        } else {
            self.config.map(|(_, n)| n.clone()).unwrap_or_default()
        }
    }
}

/// The section named `name` of a parsed file, if both are there.
fn section<'a>(file: &'a Option<(Ini, &'a String)>, name: &str) -> Option<Section<'a>> {
    file.as_ref()
        .and_then(|(f, n)| f.get(name).map(|p| (p, *n)))
}

/// The access key, the secret key and the session token.
type Keys = (String, String, Option<String>);

/// A set environment variable, empty ones as unset.
type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The endpoint(s), region and keys for `spec`, or what is missing, named.
pub fn resolve(spec: &S3Spec, src: &AccessSources<'_>) -> Result<S3Access, SpecError> {
    let env = |k: &str| (src.env)(k).filter(|v| !v.is_empty());
    let name = spec
        .profile
        .clone()
        .or_else(|| env("AWS_PROFILE"))
        .unwrap_or_else(|| "default".to_string());
    let creds_file = src.credentials.as_ref().map(|(t, n)| (parse_aws_ini(t), n));
    let config_file = src.config.as_ref().map(|(t, n)| (parse_aws_ini(t), n));
    let profile = Profile {
        creds: section(&creds_file, &name),
        config: section(&config_file, &name),
        name,
    };
    check_profile_found(spec, src, &profile)?;
    let ((access_key, secret_key, session_token), source) = keys(spec, &env, &profile)?;
    let region = spec
        .region
        .clone()
        .or_else(|| env("AWS_REGION"))
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .or_else(|| profile.get("region"))
        .unwrap_or_else(|| "us-east-1".to_string());
    let endpoints = endpoints(spec, &env, &profile)?;
    let ca_cert = spec
        .ca_cert
        .clone()
        .or_else(|| env("AWS_CA_BUNDLE").map(PathBuf::from))
        .or_else(|| profile.get("ca_bundle").map(PathBuf::from));
    Ok(S3Access {
        endpoints,
        region,
        access_key,
        secret_key,
        session_token,
        ca_cert,
        source,
    })
}

/// Refuses a --profile that neither file holds.
fn check_profile_found(
    spec: &S3Spec,
    src: &AccessSources<'_>,
    profile: &Profile<'_>,
) -> Result<(), SpecError> {
    if spec.profile.is_none() || profile.creds.is_some() || profile.config.is_some() {
        return Ok(());
    }
    Err(SpecError::new(
        "--profile",
        format!(
            "no profile '{}' in {} or {}",
            profile.name,
            src.credentials
                .as_ref()
                .map_or("the credentials file (none found)".to_string(), |c| c
                    .1
                    .clone()),
            src.config
                .as_ref()
                .map_or("the config file (none found)".to_string(), |c| c.1.clone())
        ),
    ))
}

/// The keys (access, secret, session token) and where they came from: an explicit
/// --profile first, then the environment, then the profile.
fn keys(spec: &S3Spec, env: Env<'_>, profile: &Profile<'_>) -> Result<(Keys, String), SpecError> {
    let env_keys = match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
        (Some(a), Some(s)) => Some((a, s, env("AWS_SESSION_TOKEN"))),
        _ => None,
    };
    let profile_keys = match (
        profile.get("aws_access_key_id"),
        profile.get("aws_secret_access_key"),
    ) {
        (Some(a), Some(s)) => Some((a, s, profile.get("aws_session_token"))),
        _ => None,
    };
    match (spec.profile.is_some(), env_keys, profile_keys) {
        (true, _, Some(k)) | (false, None, Some(k)) => Ok((
            k,
            format!(
                "profile {} ({})",
                profile.name,
                profile.file_of("aws_access_key_id")
            ),
        )),
        (false, Some(k), _) => Ok((k, "environment".to_string())),
        (true, _, None) | (false, None, None) => Err(SpecError::new(
            "credentials",
            format!(
                "no S3 keys: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give a profile with aws_access_key_id and aws_secret_access_key (--profile, AWS_PROFILE; looked for '{}')",
                profile.name
            ),
        )),
    }
}

/// The endpoints: --endpoint, then the environment, then the profile.
fn endpoints(
    spec: &S3Spec,
    env: Env<'_>,
    profile: &Profile<'_>,
) -> Result<Vec<S3Endpoint>, SpecError> {
    let urls: Vec<String> = if !spec.endpoints.is_empty() {
        spec.endpoints.clone()
    } else if let Some(u) = env("AWS_ENDPOINT_URL_S3")
        .or_else(|| env("AWS_ENDPOINT_URL"))
        .or_else(|| profile.get("s3.endpoint_url"))
        .or_else(|| profile.get("endpoint_url"))
    {
        u.split(',').map(|s| s.trim().to_string()).collect()
    } else {
        return Err(SpecError::new(
            "--endpoint",
            "no S3 endpoint: give --endpoint http://HOST:PORT (or set AWS_ENDPOINT_URL)",
        ));
    };
    urls.iter().map(|u| S3Endpoint::parse(u)).collect()
}

#[cfg(test)]
#[path = "credentials_tests.rs"]
mod tests;
