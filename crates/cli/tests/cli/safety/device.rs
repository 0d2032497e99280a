//! The device guard: image files with data, signatures anywhere on a device (the end
//! included), mounted loop devices. Every refused target is checked byte for byte.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Loop, error_line, path, run};

/// Reads `target` as a device (1 MiB); it must succeed.
fn read_run(target: &Path) {
    run(&[
        "run",
        "--device",
        path(target),
        "--rw",
        "read",
        "--size",
        "1MiB",
    ])
    .expect(0);
}

fn write_run(target: &Path, extra: &[&str]) -> crate::common::Ran {
    let mut args = vec![
        "run",
        "--device",
        path(target),
        "--rw",
        "write",
        "--size",
        "1MiB",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// An md RAID 1.0 superblock (as `mdadm --create --metadata=1.0` writes it): 8 KiB
/// before the end of the member, with its checksum, so libblkid recognises it.
fn md10_superblock(size: u64) -> (u64, Vec<u8>) {
    let sectors = ((size >> 9) - 16) & !7;
    let mut sb = vec![0u8; 256 + 2 * 2];
    let put32 =
        |sb: &mut Vec<u8>, at: usize, v: u32| sb[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let put64 =
        |sb: &mut Vec<u8>, at: usize, v: u64| sb[at..at + 8].copy_from_slice(&v.to_le_bytes());
    put32(&mut sb, 0, 0xa92b_4efc); // magic
    put32(&mut sb, 4, 1); // major version
    for (i, b) in sb[16..32].iter_mut().enumerate() {
        *b = i as u8 + 1; // set uuid
    }
    sb[32..39].copy_from_slice(b"iolab:0");
    put32(&mut sb, 72, 1); // raid1
    put32(&mut sb, 92, 2); // raid disks
    put64(&mut sb, 136, sectors - 16); // data size
    put64(&mut sb, 144, sectors); // super offset
    for (i, b) in sb[168..184].iter_mut().enumerate() {
        *b = i as u8 + 17; // device uuid
    }
    put32(&mut sb, 220, 2); // max dev
    let mut sum: u64 = sb
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64)
        .sum();
    sum = (sum & 0xffff_ffff) + (sum >> 32);
    put32(&mut sb, 216, sum as u32);
    (sectors * 512, sb)
}

fn md_member_image(dir: &Path) -> (PathBuf, Vec<u8>) {
    let img = dir.join("md-member.img");
    let size = 16u64 << 20;
    let mut data = vec![0u8; size as usize];
    let (at, sb) = md10_superblock(size);
    data[at as usize..at as usize + sb.len()].copy_from_slice(&sb);
    fs::write(&img, &data).unwrap();
    (img, data)
}

#[test]
fn a_regular_file_with_data_is_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    let text = b"my thesis, chapter 3\n".repeat(100_000);
    fs::write(&file, &text).unwrap();
    let r = write_run(&file, &[]).expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("it holds data (a non-zero byte at offset 0;"),
        "{line}"
    );
    assert!(line.contains("pass --allow-destroy"), "{line}");
    assert_eq!(fs::read(&file).unwrap(), text, "not one byte written");
    // `meta` and reads do not write it; with the flag it is overwritten.
    write_run(&file, &["--allow-destroy"]).expect(0);
    assert_ne!(fs::read(&file).unwrap()[..text.len()], text[..]);
}

/// Reads with verification write their own blocks first: a read-only fio job with
/// `verify=` on a file holding data overwrote it (the job prepared the file for reading
/// only, and the layout wrote it anyway). Now refused, byte for byte intact, and written
/// only with --allow-destroy.
#[test]
fn a_verify_read_of_a_file_with_data_leaves_it_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("results.dat");
    let data: Vec<u8> = (0..(1u32 << 20))
        .map(|i| (i * 7 + i / 4096) as u8)
        .collect();
    fs::write(&file, &data).unwrap();
    let job = |extra: &[&str]| {
        let mut args = vec!["fio", "--no-store"];
        args.extend_from_slice(extra);
        args.extend(["--name=r", "--rw=read", "--bs=4k", "--verify=md5"]);
        let f = format!("--filename={}", path(&file));
        args.push(&f);
        run(&args)
    };
    let r = job(&[]).expect(2);
    let line = error_line(&r);
    assert!(
        line.contains(&format!(
            "refusing to write to {}: it holds data",
            path(&file)
        )),
        "{line}"
    );
    assert_eq!(fs::read(&file).unwrap(), data, "not one byte written");
    job(&["--allow-destroy"]).expect(0);
    assert_ne!(fs::read(&file).unwrap(), data);
}

#[test]
fn an_empty_or_zero_image_is_used_and_then_known_as_iolabs() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    fs::File::create(&img).unwrap().set_len(4 << 20).unwrap();
    write_run(&img, &[]).expect(0);
    assert!(fs::read(&img).unwrap().iter().any(|&b| b != 0));
    // The image now holds iolab's data, marked as such: a second run needs no flag.
    write_run(&img, &[]).expect(0);
}

/// The mark that lets iolab write its own image again holds only for the image as iolab
/// left it: a refused run marks nothing, and once someone else writes the file, its data
/// is guarded again.
#[test]
fn the_image_mark_holds_only_for_what_iolab_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    let user: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 253) as u8 | 1).collect();
    // Refused (too small), nothing written: no mark, so the user's data put there later
    // is refused.
    fs::File::create(&img).unwrap();
    write_run(&img, &[]).expect(2);
    fs::write(&img, &user).unwrap();
    let r = write_run(&img, &[]).expect(2);
    assert!(error_line(&r).contains("it holds data"), "{}", r.stderr);
    assert_eq!(fs::read(&img).unwrap(), user);
    // Reading it needs no flag and leaves it as it is.
    read_run(&img);
    assert_eq!(fs::read(&img).unwrap(), user);
    // A read of an all-zero image writes nothing and marks nothing either.
    fs::write(&img, vec![0u8; 1 << 20]).unwrap();
    read_run(&img);
    fs::write(&img, &user).unwrap();
    write_run(&img, &[]).expect(2);
    assert_eq!(fs::read(&img).unwrap(), user);
    // Written by iolab: marked, written again without a flag; then the user's data
    // replaces it (the same inode): guarded again.
    fs::write(&img, vec![0u8; 1 << 20]).unwrap();
    write_run(&img, &[]).expect(0);
    write_run(&img, &[]).expect(0);
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs::write(&img, &user).unwrap();
    let r = write_run(&img, &[]).expect(2);
    assert!(error_line(&r).contains("it holds data"), "{}", r.stderr);
    assert_eq!(fs::read(&img).unwrap(), user, "not one byte written");
}

/// An image iolab marked and then wrote without marking again (a run killed mid-write:
/// SIGKILL, a second Ctrl-C) was refused as anyone's data, with no word of iolab: the
/// refusal now says iolab marked it and it was written since, and still writes nothing.
#[test]
fn an_image_written_since_its_mark_is_refused_saying_so() {
    use std::io::{Seek, SeekFrom, Write};
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    fs::write(&img, vec![0u8; 1 << 20]).unwrap();
    write_run(&img, &[]).expect(0);
    std::thread::sleep(std::time::Duration::from_millis(20));
    // An in-place write, as a killed run's last one (or anyone's) is.
    let mut f = fs::OpenOptions::new().write(true).open(&img).unwrap();
    f.seek(SeekFrom::Start(4096)).unwrap();
    f.write_all(&[0xA5; 512]).unwrap();
    drop(f);
    let before = fs::read(&img).unwrap();
    let r = write_run(&img, &[]).expect(2);
    let line = error_line(&r);
    if !line.contains("iolab marked it") {
        // A file system without user extended attributes keeps no mark at all.
        assert!(
            line.contains("iolab writes a regular file only if"),
            "{line}"
        );
        eprintln!("SKIPPED: {} keeps no user xattrs", dir.path().display());
        return;
    }
    // The first byte iolab's data left non-zero (its data is random from byte 0).
    let first = before.iter().position(|b| *b != 0).unwrap();
    assert_eq!(
        line,
        format!(
            "iolab: error: refusing to write to {}: it holds data (a non-zero byte at offset {first}; iolab marked it as its image, but it has been written since: by an iolab run killed before it ended, or by someone else); pass --allow-destroy to overwrite it (its contents will be lost)",
            img.display()
        )
    );
    assert_eq!(fs::read(&img).unwrap(), before, "not one byte written");
}

#[test]
fn a_file_system_signature_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let Some(img) = crate::common::ext4_image(dir.path(), "ext4.img", 32) else {
        return;
    };
    let before = fs::read(&img).unwrap();
    let r = write_run(&img, &[]).expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("a ext4 signature at byte 1080 (1080B from the start)"),
        "{line}"
    );
    assert_eq!(fs::read(&img).unwrap(), before, "not one byte written");
}

#[test]
fn an_md_1_0_member_is_refused_by_its_superblock_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let (img, data) = md_member_image(dir.path());
    let r = write_run(&img, &[]).expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("a linux_raid_member signature at byte 16769024 (8KiB before the end)"),
        "{line}"
    );
    assert_eq!(fs::read(&img).unwrap(), data, "not one byte written");
}

#[test]
fn an_md_1_0_member_on_a_loop_device_is_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let (img, data) = md_member_image(dir.path());
    let Some(dev) = Loop::attach(&img) else {
        eprintln!("SKIPPED: no loop device here (needs root and /dev/loop-control)");
        return;
    };
    let r = write_run(Path::new(&dev.0), &[]).expect(2);
    let line = error_line(&r);
    assert!(line.contains("linux_raid_member signature"), "{line}");
    assert!(line.contains("8KiB before the end"), "{line}");
    drop(dev);
    assert_eq!(fs::read(&img).unwrap(), data, "not one byte written");
}

#[test]
fn a_mounted_loop_device_and_its_backing_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let Some(img) = crate::common::ext4_image(dir.path(), "fs.img", 32) else {
        return;
    };
    let Some(dev) = Loop::attach(&img) else {
        eprintln!("SKIPPED: no loop device here (needs root and /dev/loop-control)");
        return;
    };
    let mnt = dir.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount").arg(&dev.0).arg(&mnt).status();
    if !mounted.is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED: cannot mount here");
        return;
    }
    let r = write_run(Path::new(&dev.0), &["--allow-destroy"]);
    let _ = Command::new("umount").arg(&mnt).status();
    let line = error_line(&r.expect(2));
    assert!(
        line.contains(&format!("data in use (mounted at {})", mnt.display())),
        "{line}"
    );
    // The image file behind the loop device is busy as well.
    let r = write_run(&img, &[]).expect(2);
    let line = error_line(&r);
    assert!(
        line.contains(&format!("data in use (backs {})", dev.0)),
        "{line}"
    );
}

/// Whether `dir`'s file system keeps user extended attributes (where iolab's image mark
/// lives).
fn keeps_user_xattrs(dir: &std::path::Path) -> bool {
    let probe = dir.join("xattr-probe");
    fs::write(&probe, b"").unwrap();
    let name = std::ffi::CString::new(probe.to_str().unwrap()).unwrap();
    // SAFETY: NUL-terminated strings and a one-byte value buffer of its length.
    let set = unsafe {
        libc::setxattr(
            name.as_ptr(),
            c"user.probe".as_ptr(),
            c"1".as_ptr().cast(),
            1,
            0,
        )
    };
    fs::remove_file(&probe).unwrap();
    set == 0
}

/// A pts run on an image interrupted while it writes (Ctrl-C, SIGTERM) ends its phase and
/// marks the image as it left it: the next run takes it without --allow-destroy. Only
/// a run killed mid-write leaves it guarded (above).
#[test]
fn an_interrupted_pts_run_leaves_its_image_to_the_next_run() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    if !keeps_user_xattrs(dir.path()) {
        eprintln!("SKIPPED: {} keeps no user xattrs", dir.path().display());
        return;
    }
    let img = dir.path().join("pts.img");
    fs::File::create(&img).unwrap().set_len(128 << 20).unwrap();
    let mut child = crate::common::iolab()
        .args([
            "pts",
            "--device",
            path(&img),
            "--scale",
            "0.01",
            "--no-store",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("iolab pts: preconditioning:") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "pts ended first");
    }
    // Into its writes (2 x 128 MiB), then SIGTERM, as Slurm sends at a time limit.
    std::thread::sleep(std::time::Duration::from_millis(50));
    // SAFETY: a signal to the child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130), "{rest}");
    run(&[
        "run",
        "--device",
        path(&img),
        "--rw",
        "write",
        "--size",
        "1MiB",
        "--no-store",
    ])
    .expect(0);
}
