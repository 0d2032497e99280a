//! iolab-report: turns stored results ([`iolab_core::result::RunRecord`]) into what people
//! read. [`text`] is the terminal summary every command prints.
#![forbid(unsafe_code)]

pub mod text;
