//! fio's language: its command line ([`cmdline`]) and job files ([`jobfile`]) resolved
//! into jobs ([`job`]) and planned as iolab workloads ([`plan`]), and results written in
//! fio's shapes ([`output`]: normal text, JSON and json+, terse) for fio's report
//! entries ([`units`]), so that scripts written for fio read them unchanged.

pub mod access;
pub mod cmdline;
pub mod cmdprio;
mod describe;
pub mod error;
pub mod job;
mod job_defaults;
pub mod job_files;
mod job_kinds;
pub mod jobfile;
mod known;
pub mod logs;
pub mod output;
pub mod plan;
mod plan_access;
mod plan_amount;
mod plan_data;
mod plan_settings;
mod plan_target;
pub mod reporting;
pub mod units;
mod values;

pub use cmdline::{Invocation, OutputFormat, parse_args};
pub use describe::{describe_plans, io_u_error_lines};
pub use error::FioError;
pub use job::{Engine, ExitWhat, FioJob, FioOffset, FioRw};
pub use jobfile::{RawOption, Section, Sources, parse_job_file};
pub use plan::{FioPlan, plan_jobs};
pub use plan_access::scale_rates;
pub use units::{ReportUnit, report_units};

/// The fio version whose output shapes iolab writes (its JSON's "fio version" says
/// which tool wrote it).
pub const FIO_SHAPE_VERSION: &str = "fio-3.33";
