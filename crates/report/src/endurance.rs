//! What `iolab endurance` prints: the write rate and where it came from, then the
//! [`Projection`]'s lines: written over the period, the rating, drive writes per day,
//! the lifetime and the verdict.

use iolab_core::endurance::{Projection, dwpd_of, exact_bytes, lifetime_text};
use iolab_core::units::ByteCount;

/// The projection `p` of a rate from `source` (with what its run warned of), with drive
/// writes per day when the device's `capacity` is known.
pub fn endurance_text(
    p: &Projection,
    source: &str,
    warnings: &[String],
    capacity: Option<ByteCount>,
) -> String {
    let mut out = format!(
        "write rate:      {} ({}), {source}\n",
        p.rate.human(),
        p.rate.human_decimal()
    );
    for w in warnings {
        out.push_str(&format!("warning:         {w}\n"));
    }
    out.push_str(&format!(
        "over {} years:   {} written\n",
        p.years,
        exact_bytes(p.written)
    ));
    out.push_str(&format!(
        "rated endurance: {}\n",
        exact_bytes(p.rated.get() as f64)
    ));
    if let Some(c) = capacity {
        out.push_str(&format!(
            "drive writes:    {:.2} per day on {}\n",
            dwpd_of(p.rate, c),
            c.human()
        ));
    }
    out.push_str(&format!(
        "lifetime:        {} at this rate\n",
        lifetime_text(p.lifetime_years)
    ));
    out.push_str(&if p.lasts() {
        format!(
            "verdict:         lasts: the rating covers {:.2}x what {} years write\n",
            p.margin, p.years
        )
    } else {
        format!(
            "verdict:         WEARS OUT after {}: {} years write {:.2}x the rating\n",
            lifetime_text(p.lifetime_years),
            p.years,
            1.0 / p.margin
        )
    });
    out
}
