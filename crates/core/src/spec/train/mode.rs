//! MLPerf Storage v3.0's categories ([`MlperfMode`]) and which preset, accelerator and
//! category go together ([`resolve_preset`]): closed and open take unet3d and retinanet
//! on b200 and mi355; every other model, and h100/a100, run only as whatif.

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use super::TrainSpec;
use super::presets::{PresetValues, preset_accelerators, preset_values};
use crate::error::SpecError;

/// v3.0's result categories (`<results-dir>/<mode>/...` in mlpstorage).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum MlperfMode {
    Closed,
    Open,
    /// Not submittable: a model or accelerator v3.0 keeps out of closed and open.
    Whatif,
}

impl MlperfMode {
    pub fn name(self) -> &'static str {
        match self {
            MlperfMode::Closed => "closed",
            MlperfMode::Open => "open",
            MlperfMode::Whatif => "whatif",
        }
    }
}

/// The preset's values and category, or why this combination cannot run: a closed or
/// open run of a model or accelerator v3.0 takes only as whatif, or a model with no
/// workload file for the accelerator (unless --computation-time gives the one figure
/// that file would hold; the model's first accelerator gives the rest).
pub(super) fn resolve_preset(
    spec: &TrainSpec,
) -> Result<Option<(PresetValues, MlperfMode)>, SpecError> {
    let Some(p) = spec.preset else {
        if spec.mode.is_some() {
            return Err(SpecError::new(
                "--mode",
                "needs --preset: closed, open and whatif are categories of MLPerf Storage's workloads",
            ));
        }
        return Ok(None);
    };
    let acc = spec.accelerator;
    let submittable = p.v3_submittable() && acc.v3_submittable();
    let mode = spec.mode.unwrap_or(if submittable {
        MlperfMode::Closed
    } else {
        MlperfMode::Whatif
    });
    if mode != MlperfMode::Whatif && !acc.v3_submittable() {
        return Err(SpecError::new(
            "--accelerator",
            format!(
                "{} is a v2.0 accelerator: MLPerf Storage v3.0 runs it only as whatif; a {} run takes b200 or mi355 (or --mode whatif)",
                acc.name(),
                mode.name()
            ),
        ));
    }
    if mode != MlperfMode::Whatif && !p.v3_submittable() {
        return Err(SpecError::new(
            "--mode",
            format!(
                "{}: MLPerf Storage v3.0 runs {} only as whatif; closed and open take unet3d or retinanet",
                mode.name(),
                p.name()
            ),
        ));
    }
    let values = match preset_values(p, acc) {
        Some(v) => v,
        None if spec.computation_time.is_some() => {
            let first = preset_accelerators(p)[0];
            preset_values(p, first).expect("a model's first accelerator has a file")
        }
        None => {
            let have: Vec<&str> = preset_accelerators(p).iter().map(|a| a.name()).collect();
            return Err(SpecError::new(
                "--accelerator",
                format!(
                    "MLPerf Storage has no {} workload file (it has {}): pick one of those, or give --computation-time",
                    p.dlio_workload(acc),
                    have.join(", ")
                ),
            ));
        }
    };
    Ok(Some((values, mode)))
}
