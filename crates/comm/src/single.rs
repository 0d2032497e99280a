//! [`SingleProcess`]: a run of one rank; every collective is immediate.

use crate::Comm;

#[derive(Debug, Clone)]
pub struct SingleProcess {
    host: String,
}

impl SingleProcess {
    pub fn new() -> Self {
        SingleProcess {
            host: crate::hostname(),
        }
    }
}

impl Default for SingleProcess {
    fn default() -> Self {
        Self::new()
    }
}

impl Comm for SingleProcess {
    fn rank(&self) -> u32 {
        0
    }
    fn size(&self) -> u32 {
        1
    }
    fn host(&self) -> &str {
        &self.host
    }
    fn barrier(&self) {}
    fn all_gather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        vec![mine.to_vec()]
    }
    fn broadcast_bytes(&self, _root: u32, data: &[u8]) -> Vec<u8> {
        data.to_vec()
    }
    fn gather_bytes(&self, _root: u32, mine: &[u8]) -> Vec<Vec<u8>> {
        vec![mine.to_vec()]
    }
    fn all_ok(&self, ok: bool) -> bool {
        ok
    }
    fn all_max(&self, value: u64) -> u64 {
        value
    }
    fn all_sum(&self, value: u64) -> u64 {
        value
    }
    fn abort(&self, code: i32) -> ! {
        std::process::exit(code)
    }
}
