//! DLIO's languages: its dataset files ([`npz`] as numpy's `np.savez` writes them,
//! [`tfrecord`] as TensorFlow's TFRecordWriter writes tf.train.Example records), its file
//! names ([`file_name`]) and its result file ([`summary`], summary.json). Pure functions:
//! bytes in, bytes out; the writing and reading is iolab-suites' train module.

pub mod npz;
pub mod parquet;
pub mod summary;
pub mod tfrecord;

/// DLIO's name of training file `index` of `count` (data_generator.py):
/// `img_{index zero-padded to count's digits}_of_{count}.{ext}`.
pub fn file_name(index: u64, count: u64, ext: &str) -> String {
    let width = count.to_string().len();
    format!("img_{index:0width$}_of_{count}.{ext}")
}

/// The subfolder of file `index` when the files are spread over `subfolders` (DLIO:
/// round-robin, names zero-padded to the subfolder count's digits); None with 0 or 1.
pub fn subfolder(index: u64, subfolders: u32) -> Option<String> {
    if subfolders <= 1 {
        return None;
    }
    let width = subfolders.to_string().len();
    Some(format!("{:0width$}", index % u64::from(subfolders)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_dlio() {
        assert_eq!(file_name(7, 168, "npz"), "img_007_of_168.npz");
        assert_eq!(file_name(0, 8, "tfrecord"), "img_0_of_8.tfrecord");
        assert_eq!(subfolder(13, 10).as_deref(), Some("03"));
        assert_eq!(subfolder(13, 12).as_deref(), Some("01"));
        assert_eq!(subfolder(3, 1), None);
    }
}

/// A DLIO file or result that iolab cannot take as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CompatError(pub String);

impl CompatError {
    pub fn new(why: impl Into<String>) -> Self {
        CompatError(why.into())
    }
}
