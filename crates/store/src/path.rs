//! Where the results database lives when no `--db` is given: [`default_db_path`] reads
//! `IOLAB_DB`, then `XDG_DATA_HOME`, then `HOME`; [`default_db_path_from`] is the same rule
//! over any environment, so it can be tested without touching the process's.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::error::StoreError;

/// The environment variable naming the results database.
pub const DB_ENV: &str = "IOLAB_DB";

/// The database's path below the data directory.
const BELOW_DATA_HOME: [&str; 2] = ["iolab", "results.db"];

/// The default results database for this process's environment.
pub fn default_db_path() -> Result<PathBuf, StoreError> {
    default_db_path_from(|name| std::env::var_os(name))
}

/// The default results database given an environment lookup:
/// 1. `$IOLAB_DB` as given (a relative path is relative to the working directory);
/// 2. `$XDG_DATA_HOME/iolab/results.db`, if that variable holds an absolute path (the XDG
///    base directory spec says to ignore a relative one);
/// 3. `$HOME/.local/share/iolab/results.db`.
///
/// Empty variables count as unset.
pub fn default_db_path_from(env: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, StoreError> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(db) = var(DB_ENV) {
        return Ok(PathBuf::from(db));
    }
    let data_home = var("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".local").join("share")));
    match data_home {
        Some(dir) => Ok(BELOW_DATA_HOME.iter().fold(dir, |p, part| p.join(part))),
        None => Err(StoreError::NoDefaultPath),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn iolab_db_wins() {
        let vars = [
            ("IOLAB_DB", "/scratch/me/r.db"),
            ("XDG_DATA_HOME", "/xdg"),
            ("HOME", "/home/me"),
        ];
        assert_eq!(
            default_db_path_from(env(&vars)).unwrap(),
            PathBuf::from("/scratch/me/r.db")
        );
    }

    #[test]
    fn relative_iolab_db_is_kept_as_given() {
        let vars = [("IOLAB_DB", "results.db"), ("HOME", "/home/me")];
        assert_eq!(
            default_db_path_from(env(&vars)).unwrap(),
            PathBuf::from("results.db")
        );
    }

    #[test]
    fn xdg_data_home_comes_next() {
        let vars = [("XDG_DATA_HOME", "/xdg"), ("HOME", "/home/me")];
        assert_eq!(
            default_db_path_from(env(&vars)).unwrap(),
            PathBuf::from("/xdg/iolab/results.db")
        );
    }

    #[test]
    fn home_is_the_fallback() {
        let vars = [("HOME", "/home/me")];
        assert_eq!(
            default_db_path_from(env(&vars)).unwrap(),
            PathBuf::from("/home/me/.local/share/iolab/results.db")
        );
    }

    #[test]
    fn empty_and_relative_values_are_ignored() {
        let vars = [
            ("IOLAB_DB", ""),
            ("XDG_DATA_HOME", "relative/dir"),
            ("HOME", "/home/me"),
        ];
        assert_eq!(
            default_db_path_from(env(&vars)).unwrap(),
            PathBuf::from("/home/me/.local/share/iolab/results.db")
        );
    }

    #[test]
    fn nothing_set_is_a_clear_error() {
        let err = default_db_path_from(env(&[("HOME", "")])).unwrap_err();
        assert!(matches!(err, StoreError::NoDefaultPath));
        assert!(
            err.to_string().contains("pass --db PATH or set IOLAB_DB"),
            "{err}"
        );
    }
}
