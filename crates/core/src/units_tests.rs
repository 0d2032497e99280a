use super::*;
use proptest::prelude::*;

#[test]
fn parses_binary_and_decimal_sizes() {
    assert_eq!("4KiB".parse::<ByteCount>().unwrap(), ByteCount(4096));
    assert_eq!("4k".parse::<ByteCount>().unwrap(), ByteCount(4096));
    assert_eq!("1MiB".parse::<ByteCount>().unwrap(), ByteCount(1 << 20));
    assert_eq!(
        "2TB".parse::<ByteCount>().unwrap(),
        ByteCount(2_000_000_000_000)
    );
    assert_eq!("1.5GiB".parse::<ByteCount>().unwrap(), ByteCount(3 << 29));
    assert_eq!("47008".parse::<ByteCount>().unwrap(), ByteCount(47008));
    assert_eq!("3901c".parse::<ByteCount>().unwrap(), ByteCount(3901));
    assert_eq!(" 512 B ".parse::<ByteCount>().unwrap(), ByteCount(512));
}

#[test]
fn rejects_bad_sizes_with_the_input_named() {
    for bad in ["", "KiB", "4XB", "0.5B", "-1", "1.2.3k", "99999999999PiB"] {
        let err = bad.parse::<ByteCount>().unwrap_err().to_string();
        assert!(err.contains(&format!("'{bad}'")), "{err}");
    }
}

#[test]
fn displays_exact_sizes() {
    assert_eq!(ByteCount(4096).to_string(), "4KiB");
    assert_eq!(ByteCount(47008).to_string(), "47008B");
    assert_eq!(ByteCount(2 * GIB).to_string(), "2GiB");
    assert_eq!(ByteCount(0).to_string(), "0B");
    assert_eq!(ByteCount(3 * MIB / 2).human(), "1.50 MiB");
}

/// Up to EiB: `--block-align 15EiB` was shown as 15360PiB.
#[test]
fn displays_exbibytes() {
    assert_eq!(ByteCount(15 * EIB).to_string(), "15EiB");
    assert_eq!(ByteCount(EIB).to_string(), "1EiB");
    assert_eq!(ByteCount(1536 * PIB).to_string(), "1536PiB");
    assert_eq!(
        ByteCount(15 * EIB + KIB).to_string(),
        "16888498602639361KiB"
    );
    for s in ["15EiB", "1EiB", "15E"] {
        let b: ByteCount = s.parse().unwrap();
        assert_eq!(b.to_string().parse::<ByteCount>().unwrap(), b, "{s}");
    }
    assert_eq!(ByteCount(15 * EIB).human(), "15.0 EiB");
}

#[test]
fn parses_durations() {
    assert_eq!("30s".parse::<TimeSpan>().unwrap(), TimeSpan::from_secs(30));
    assert_eq!("300".parse::<TimeSpan>().unwrap(), TimeSpan::from_secs(300));
    assert_eq!("5m".parse::<TimeSpan>().unwrap(), TimeSpan::from_secs(300));
    assert_eq!(
        "1.5s".parse::<TimeSpan>().unwrap(),
        TimeSpan(Nanos::from_millis(1500))
    );
    assert_eq!(TimeSpan(Nanos::from_millis(1500)).to_string(), "1500ms");
    assert!("5 parsecs".parse::<TimeSpan>().is_err());
}

/// 18446744073s fits in u64 nanoseconds but a deadline of now plus it does not: a run
/// panicked in its worker thread adding them.
#[test]
fn durations_longer_than_100_years_are_refused() {
    assert_eq!(
        "876000h".parse::<TimeSpan>().unwrap(),
        TimeSpan::MAX,
        "100 years"
    );
    for text in ["876001h", "18446744073s", "3153600000.001s"] {
        assert_eq!(
            text.parse::<TimeSpan>().unwrap_err().to_string(),
            format!("duration '{text}' is longer than 100 years, the longest iolab takes")
        );
    }
    #[derive(Deserialize)]
    struct S {
        #[allow(dead_code)]
        t: TimeSpan,
    }
    for toml_text in ["t = 18446744073", "t = 1e30", "t = \"18446744073s\""] {
        let e = toml::from_str::<S>(toml_text).err().expect(toml_text);
        assert!(e.to_string().contains("longer than 100 years"), "{e}");
    }
}

#[test]
fn rates_and_bandwidths() {
    assert_eq!(
        bandwidth(ByteCount::gib(1), Nanos::SECOND).gib_per_sec(),
        1.0
    );
    assert_eq!(rate(1000, Nanos::from_millis(500)).get(), 2000.0);
    assert_eq!(rate(1000, Nanos::ZERO).get(), 0.0);
    assert_eq!(OpsPerSec(123_456.0).human(), "123k");
    assert_eq!(BytesPerSec(505e6).human_decimal(), "505 MB/s");
    // Rounding up to 1000 moves to the next prefix.
    assert_eq!(BytesPerSec(999_999_999.9).human_decimal(), "1.00 GB/s");
    assert_eq!(OpsPerSec(999.7).human(), "1.00k");
    assert_eq!(OpsPerSec(999.4).human(), "999");
}

#[test]
fn cpu_lists_round_trip() {
    let l: CpuList = "0-3,8, 10-11".parse().unwrap();
    assert_eq!(l.0, vec![0, 1, 2, 3, 8, 10, 11]);
    assert_eq!(l.to_string(), "0-3,8,10-11");
    assert!("3-1".parse::<CpuList>().is_err());
    assert!("a".parse::<CpuList>().is_err());
    assert!("1,,2".parse::<CpuList>().is_err());
}

#[test]
fn serde_accepts_strings_and_numbers() {
    #[derive(Deserialize, Serialize)]
    struct S {
        b: ByteCount,
        t: TimeSpan,
    }
    let s: S = toml::from_str("b = \"4KiB\"\nt = 60").unwrap();
    assert_eq!(s.b, ByteCount(4096));
    assert_eq!(s.t, TimeSpan::from_secs(60));
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(json, r#"{"b":4096,"t":"60s"}"#);
    let back: S = serde_json::from_str(&json).unwrap();
    assert_eq!(back.b, s.b);
}

proptest! {
    #[test]
    fn byte_count_display_parses_back(v in 0u64..(1u64 << 62)) {
        let b = ByteCount(v);
        prop_assert_eq!(b.to_string().parse::<ByteCount>().unwrap(), b);
    }

    #[test]
    fn time_span_display_parses_back(v in 0u64..=TimeSpan::MAX.0.0) {
        let t = TimeSpan(Nanos(v));
        prop_assert_eq!(t.to_string().parse::<TimeSpan>().unwrap(), t);
    }
}
