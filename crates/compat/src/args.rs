//! Reading IOR's and mdtest's short-option command lines: [`Args`] walks `-x value`,
//! `-xvalue`, `--long=value` and `--long value`, and every error names the tool and the
//! option ("ior -t: '2q' is not a size ...").

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{tool} {option}: {message}")]
pub struct ArgError {
    pub tool: &'static str,
    pub option: String,
    pub message: String,
}

/// A cursor over one tool's arguments.
pub struct Args<'a> {
    tool: &'static str,
    argv: &'a [String],
    next: usize,
    /// A value glued to the flag (`-t2m`, `--dataPacketType=timestamp`).
    glued: Option<String>,
}

impl<'a> Args<'a> {
    pub fn new(tool: &'static str, argv: &'a [String]) -> Self {
        Args {
            tool,
            argv,
            next: 0,
            glued: None,
        }
    }

    pub fn error(&self, option: &str, message: String) -> ArgError {
        ArgError {
            tool: self.tool,
            option: option.to_string(),
            message,
        }
    }

    /// The next flag (`-t`, `--posix.odirect`); a glued value is kept for [`Args::value`].
    pub fn next_flag(&mut self) -> Result<Option<String>, ArgError> {
        if let Some(g) = self.glued.take() {
            return Err(self.error(&g, "a value where an option was expected".into()));
        }
        let Some(arg) = self.argv.get(self.next) else {
            return Ok(None);
        };
        self.next += 1;
        if let Some(long) = arg.strip_prefix("--") {
            return Ok(Some(match long.split_once('=') {
                Some((k, v)) => {
                    self.glued = Some(v.to_string());
                    format!("--{k}")
                }
                None => arg.clone(),
            }));
        }
        match arg.strip_prefix('-') {
            Some(short) if !short.is_empty() => {
                let mut chars = short.chars();
                let flag = chars.next().expect("not empty");
                let rest: String = chars.collect();
                // IOR's and mdtest's parser skip a '=' after a short flag: IO500 writes
                // `-G=1837305614` and `-t=4096`.
                let rest = rest.strip_prefix('=').map(str::to_string).unwrap_or(rest);
                if !rest.is_empty() {
                    self.glued = Some(rest);
                }
                Ok(Some(format!("-{flag}")))
            }
            _ => Err(self.error(
                arg,
                "not an option: every argument is an option and its value".into(),
            )),
        }
    }

    /// The value of `flag`: glued to it or the next argument.
    pub fn value(&mut self, flag: &str) -> Result<String, ArgError> {
        if let Some(g) = self.glued.take() {
            return Ok(g);
        }
        match self.argv.get(self.next) {
            Some(v) => {
                self.next += 1;
                Ok(v.clone())
            }
            None => Err(self.error(flag, "needs a value".into())),
        }
    }

    /// A repeated short flag glued to itself (`-vvv`) counts as one more each.
    pub fn repeats(&mut self, flag: char) -> u32 {
        match self.glued.take() {
            Some(g) if g.chars().all(|c| c == flag) => g.len() as u32,
            other => {
                self.glued = other;
                0
            }
        }
    }

    pub fn number<T: TryFrom<u64>>(&mut self, flag: &str) -> Result<T, ArgError> {
        let v = self.value(flag)?;
        v.trim()
            .parse::<u64>()
            .ok()
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| self.error(flag, format!("'{v}' is not a whole number in range")))
    }

    /// A number of seconds (IOR's -D and -d, mdtest's -W): at most 100 years, iolab's
    /// longest duration (2^64-1 s overflowed the nanoseconds of a deadline).
    pub fn seconds(&mut self, flag: &str) -> Result<u64, ArgError> {
        let v: u64 = self.number(flag)?;
        let max = iolab_core::units::TimeSpan::MAX.nanos().0 / 1_000_000_000;
        if v > max {
            return Err(self.error(
                flag,
                format!("{v} seconds is more than 100 years, the longest iolab takes"),
            ));
        }
        Ok(v)
    }

    /// A size as IOR and mdtest read it: a whole number with k, m, g or t (powers of
    /// 1024), upper or lower case.
    pub fn size(&mut self, flag: &str) -> Result<u64, ArgError> {
        let v = self.value(flag)?;
        let t = v.trim();
        let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
        let scale: u64 = match unit.to_ascii_lowercase().as_str() {
            "" => 1,
            "k" => 1 << 10,
            "m" => 1 << 20,
            "g" => 1 << 30,
            "t" => 1 << 40,
            _ => 0,
        };
        num.parse::<u64>()
            .ok()
            .filter(|_| scale > 0)
            .and_then(|n| n.checked_mul(scale))
            .ok_or_else(|| {
                self.error(
                    flag,
                    format!("'{t}' is not a size: use a number with k, m, g or t"),
                )
            })
    }

    pub fn signed(&mut self, flag: &str) -> Result<i64, ArgError> {
        let v = self.value(flag)?;
        v.trim()
            .parse::<i64>()
            .map_err(|_| self.error(flag, format!("'{v}' is not a whole number")))
    }
}
