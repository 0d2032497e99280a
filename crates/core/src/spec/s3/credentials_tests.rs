use std::collections::BTreeMap;

use super::*;

fn spec() -> S3Spec {
    S3Spec {
        bucket: "bkt".into(),
        ..S3Spec::default()
    }
}

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k: &str| m.get(k).cloned()
}

const CREDS: &str = "[default]\naws_access_key_id = DK\naws_secret_access_key = DS\n\n[lab]\naws_access_key_id=LK\naws_secret_access_key=LS\naws_session_token=LT\n";
const CONFIG: &str = "[default]\nregion = eu-west-1\n\n[profile lab]\nregion = lab-1\nendpoint_url = http://10.0.0.1:8333\n[profile nested]\ns3 =\n  endpoint_url = https://s3.example:9000\naws_access_key_id = NK\naws_secret_access_key = NS\n";

#[test]
fn ini_sections_profiles_and_nested_keys() {
    let c = parse_aws_ini(CONFIG);
    assert_eq!(c["default"]["region"], "eu-west-1");
    assert_eq!(c["lab"]["endpoint_url"], "http://10.0.0.1:8333");
    assert_eq!(c["nested"]["s3.endpoint_url"], "https://s3.example:9000");
    assert_eq!(c["nested"]["aws_access_key_id"], "NK");
}

#[test]
fn environment_keys_win_over_the_default_profile() {
    let env = env_of(&[
        ("AWS_ACCESS_KEY_ID", "EK"),
        ("AWS_SECRET_ACCESS_KEY", "ES"),
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:8333"),
    ]);
    let a = resolve(
        &spec(),
        &AccessSources {
            env: &env,
            credentials: Some((CREDS, "creds".into())),
            config: Some((CONFIG, "config".into())),
        },
    )
    .unwrap();
    assert_eq!((a.access_key.as_str(), a.secret_key.as_str()), ("EK", "ES"));
    assert_eq!(a.source, "environment");
    // The region still comes from the default profile.
    assert_eq!(a.region, "eu-west-1");
    assert_eq!(a.endpoints[0].port, 8333);
    assert!(
        !format!("{a:?}").contains("ES"),
        "Debug must hide the secret"
    );
}

#[test]
fn an_explicit_profile_wins_over_the_environment() {
    let env = env_of(&[("AWS_ACCESS_KEY_ID", "EK"), ("AWS_SECRET_ACCESS_KEY", "ES")]);
    let s = S3Spec {
        profile: Some("lab".into()),
        ..spec()
    };
    let a = resolve(
        &s,
        &AccessSources {
            env: &env,
            credentials: Some((CREDS, "creds".into())),
            config: Some((CONFIG, "config".into())),
        },
    )
    .unwrap();
    assert_eq!(a.access_key, "LK");
    assert_eq!(a.session_token.as_deref(), Some("LT"));
    assert_eq!(a.region, "lab-1");
    assert_eq!(a.endpoints[0].host, "10.0.0.1");
    assert_eq!(a.source, "profile lab (creds)");
}

#[test]
fn aws_profile_and_nested_s3_endpoint() {
    let env = env_of(&[("AWS_PROFILE", "nested")]);
    let a = resolve(
        &spec(),
        &AccessSources {
            env: &env,
            credentials: None,
            config: Some((CONFIG, "config".into())),
        },
    )
    .unwrap();
    assert_eq!(a.access_key, "NK");
    assert!(a.endpoints[0].tls);
    assert_eq!(a.endpoints[0].authority(), "s3.example:9000");
    assert_eq!(a.source, "profile nested (config)");
}

#[test]
fn missing_pieces_are_named() {
    let env = env_of(&[]);
    let e = resolve(
        &spec(),
        &AccessSources {
            env: &env,
            credentials: None,
            config: None,
        },
    )
    .unwrap_err();
    assert_eq!(e.option, "credentials");
    let s = S3Spec {
        profile: Some("nope".into()),
        ..spec()
    };
    let e = resolve(
        &s,
        &AccessSources {
            env: &env,
            credentials: Some((CREDS, "/h/.aws/credentials".into())),
            config: None,
        },
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("no profile 'nope' in /h/.aws/credentials"),
        "{e}"
    );
    let env = env_of(&[("AWS_ACCESS_KEY_ID", "EK"), ("AWS_SECRET_ACCESS_KEY", "ES")]);
    let e = resolve(
        &spec(),
        &AccessSources {
            env: &env,
            credentials: None,
            config: None,
        },
    )
    .unwrap_err();
    assert_eq!(e.option, "--endpoint");
}
