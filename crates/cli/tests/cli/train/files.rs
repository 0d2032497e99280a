//! The files `iolab train datagen` writes, read by readers that are not iolab's: numpy's
//! np.load for npz, a TFRecord walk with its own CRC-32C in Python.

use super::{json_of, numpy_python, python};
use crate::common::{path, run};

#[test]
fn npz_files_load_in_numpy_with_dlio_shapes() {
    let Some(py) = numpy_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let r = run(&[
        "train",
        "datagen",
        "--data-dir",
        path(&data),
        "--files",
        "5",
        "--samples-per-file",
        "3",
        "--record-length",
        "40000",
        "--record-length-stdev",
        "8000",
        "--no-store",
    ])
    .expect(0);
    assert!(r.stdout.contains("5 npz files"), "{}", r.stdout);
    let names: Vec<String> = std::fs::read_dir(data.join("train"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.contains(&"img_0_of_5.npz".to_string()), "{names:?}");
    let out = python(
        &py,
        "import sys, glob, numpy as np\n\
         for f in sorted(glob.glob(sys.argv[1] + '/train/*.npz')):\n\
         \x20   z = np.load(f)\n\
         \x20   x, y = z['x'], z['y']\n\
         \x20   assert x.dtype == np.uint8 and x.shape[2] == 3 and list(y) == [0, 0, 0], (x.shape, y)\n\
         \x20   print(x.shape[0], x.shape[1])\n",
        &[path(&data)],
    );
    let dims: Vec<(u64, u64)> = out
        .lines()
        .map(|l| {
            let mut it = l.split_whitespace().map(|v| v.parse::<u64>().unwrap());
            (it.next().unwrap(), it.next().unwrap())
        })
        .collect();
    assert_eq!(dims.len(), 5);
    // DLIO's dimension is int(sqrt(40000)) = 200, each side drawn with stdev 8000/2/200.
    assert!(
        dims.iter()
            .all(|(a, b)| (150..250).contains(a) && (150..250).contains(b)),
        "{dims:?}"
    );
    assert!(
        dims.iter().any(|d| *d != (200, 200)),
        "the stdev varies the sizes: {dims:?}"
    );
}

/// TFRecord walked and both CRCs of every record checked in Python (its own CRC-32C),
/// and the Example's fields found where TensorFlow puts them.
const TFRECORD_CHECK: &str = r#"
import sys, glob, struct
T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    T.append(c)
def crc(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
def masked(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF
n = 0
for f in sorted(glob.glob(sys.argv[1] + '/train/*.tfrecord')):
    b = open(f, 'rb').read()
    at = 0
    while at < len(b):
        ln, = struct.unpack('<Q', b[at:at+8])
        assert struct.unpack('<I', b[at+8:at+12])[0] == masked(crc(b[at:at+8])), 'length crc'
        data = b[at+12:at+12+ln]
        assert struct.unpack('<I', b[at+12+ln:at+16+ln])[0] == masked(crc(data)), 'data crc'
        assert b'\n\x04size' in data[:32] and b'\n\x05image' in data[:48]
        at += 16 + ln
        n += 1
print(n)
"#;

#[test]
fn tfrecord_crcs_check_in_an_independent_reader() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    run(&[
        "train",
        "datagen",
        "--data-dir",
        path(&data),
        "--format",
        "tfrecord",
        "--files",
        "3",
        "--samples-per-file",
        "4",
        "--record-length",
        "2000",
        "--subfolders",
        "2",
        "--no-store",
    ])
    .expect(0);
    assert!(data.join("train/0/img_0_of_3.tfrecord").exists());
    assert!(data.join("train/1/img_1_of_3.tfrecord").exists());
    // Any python3 will do: no numpy needed.
    let py = std::env::var("IOLAB_TEST_NUMPY").unwrap_or_else(|_| "python3".into());
    // The subfolders are flattened for the check.
    let flat = dir.path().join("flat");
    std::fs::create_dir_all(flat.join("train")).unwrap();
    for sub in ["0", "1"] {
        for e in std::fs::read_dir(data.join("train").join(sub)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), flat.join("train").join(e.file_name())).unwrap();
        }
    }
    let out = python(&py, TFRECORD_CHECK, &[path(&flat)]);
    assert_eq!(out.trim(), "12");
    // And iolab reads the dataset back with its subfolders.
    let json = dir.path().join("run.json");
    run(&[
        "train",
        "run",
        "--data-dir",
        path(&data),
        "--format",
        "tfrecord",
        "--files",
        "3",
        "--samples-per-file",
        "4",
        "--record-length",
        "2000",
        "--batch-size",
        "2",
        "--json",
        path(&json),
        "--no-store",
    ])
    .expect(0);
    let v = json_of(&json);
    assert_eq!(v["phases"][0]["figures"]["steps"].as_f64().unwrap(), 6.0);
    // Every byte of the three files was read once.
    let bytes: u64 = [
        "0/img_0_of_3.tfrecord",
        "1/img_1_of_3.tfrecord",
        "0/img_2_of_3.tfrecord",
    ]
    .iter()
    .map(|f| std::fs::metadata(data.join("train").join(f)).unwrap().len())
    .sum();
    assert_eq!(v["phases"][0]["ops"][0]["bytes"].as_u64().unwrap(), bytes);
}
