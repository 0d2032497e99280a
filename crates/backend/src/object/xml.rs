//! The few pieces of S3's XML answers iolab reads (an error's Code and Message, a
//! multipart upload's UploadId, a listing's keys, truncation and continuation token, a
//! multi-object delete's results), found by tag name. Not a general XML parser: S3's
//! answers are flat and tag names do not repeat at other depths in what is read.

use std::borrow::Cow;

/// The text of the first `<name>...</name>` in `xml`, entities decoded.
pub fn first<'a>(xml: &'a [u8], name: &str) -> Option<Cow<'a, str>> {
    all(xml, name).next()
}

/// The texts of every `<name>...</name>` in `xml`, in order.
pub fn all<'a>(xml: &'a [u8], name: &str) -> impl Iterator<Item = Cow<'a, str>> + 'a {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let mut at = 0;
    std::iter::from_fn(move || {
        let rest = &xml[at..];
        let s = find(rest, open.as_bytes())? + open.len();
        let e = find(&rest[s..], close.as_bytes())? + s;
        at += e + close.len();
        Some(unescape(std::str::from_utf8(&rest[s..e]).unwrap_or("")))
    })
}

/// How many `<name>` elements `xml` holds (also `<name/>` and `<name attr>`).
pub fn count(xml: &[u8], name: &str) -> u64 {
    let open = format!("<{name}");
    let mut n = 0;
    let mut at = 0;
    while let Some(i) = find(&xml[at..], open.as_bytes()) {
        let after = xml.get(at + i + open.len()).copied();
        if matches!(after, Some(b'>' | b'/' | b' ')) {
            n += 1;
        }
        at += i + open.len();
    }
    n
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn unescape(s: &str) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest.find(';').unwrap_or(0);
        let ent = &rest[1..end.max(1)];
        let c = match ent {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ if ent.starts_with("#x") => u32::from_str_radix(&ent[2..], 16)
                .ok()
                .and_then(char::from_u32),
            _ if ent.starts_with('#') => ent[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match c {
            Some(c) if end > 0 => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            _ => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Appends `s` with XML's special characters escaped.
pub fn push_escaped(out: &mut Vec<u8>, s: &str) {
    for c in s.bytes() {
        match c {
            b'&' => out.extend_from_slice(b"&amp;"),
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            b'\'' => out.extend_from_slice(b"&apos;"),
            _ => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_s3_answers() {
        let x = b"<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>a&amp;b</Key><Size>3</Size></Contents><Contents><Key>c</Key></Contents><NextContinuationToken>t=1</NextContinuationToken></ListBucketResult>";
        assert_eq!(first(x, "IsTruncated").as_deref(), Some("true"));
        let keys: Vec<_> = all(x, "Key").collect();
        assert_eq!(keys, ["a&b", "c"]);
        assert_eq!(count(x, "Contents"), 2);
        assert_eq!(first(x, "NextContinuationToken").as_deref(), Some("t=1"));
        assert_eq!(first(x, "Missing"), None);
        assert_eq!(unescape("&#65;&#x42;&bogus"), "AB&bogus");
    }
}
