//! [`Glob`]: shell patterns as find's -name matches them: `*` any text (a leading '.'
//! included), `?` one character, `[...]` one character of a set with ranges, `[!...]` /
//! `[^...]` one not in it, POSIX classes such as `[[:digit:]]`, and `\` quoting the next
//! character. Names are matched character by character when they are UTF-8, byte by byte
//! otherwise. Matching does not allocate.

/// One element of a compiled pattern.
#[derive(Clone, Debug)]
enum Token {
    Char(char),
    AnyChar,
    AnyText,
    Set { negated: bool, items: Vec<SetItem> },
}

#[derive(Clone, Debug)]
enum SetItem {
    Range(char, char),
    Class(fn(char) -> bool),
}

impl SetItem {
    fn contains(&self, c: char) -> bool {
        match self {
            SetItem::Range(lo, hi) => *lo <= c && c <= *hi,
            SetItem::Class(f) => f(c),
        }
    }
}

/// A compiled shell pattern.
#[derive(Clone, Debug)]
pub struct Glob {
    tokens: Vec<Token>,
}

fn class(name: &str) -> Option<fn(char) -> bool> {
    Some(match name {
        "alpha" => |c: char| c.is_alphabetic(),
        "digit" => |c: char| c.is_ascii_digit(),
        "alnum" => |c: char| c.is_alphanumeric(),
        "upper" => |c: char| c.is_uppercase(),
        "lower" => |c: char| c.is_lowercase(),
        "space" => |c: char| c.is_whitespace(),
        "punct" => |c: char| c.is_ascii_punctuation(),
        "xdigit" => |c: char| c.is_ascii_hexdigit(),
        _ => return None,
    })
}

/// Parses the set starting after '[' at `chars[start]`; returns it and the index after
/// its ']', or None when the set is not closed (the '[' is then an ordinary character).
fn parse_set(chars: &[char], start: usize) -> Option<(Token, usize)> {
    let mut i = start;
    let negated = matches!(chars.get(i), Some('!') | Some('^'));
    if negated {
        i += 1;
    }
    let mut items = Vec::new();
    let mut first = true;
    loop {
        let c = *chars.get(i)?;
        if c == ']' && !first {
            return Some((Token::Set { negated, items }, i + 1));
        }
        first = false;
        if c == '[' && chars.get(i + 1) == Some(&':') {
            let rest: String = chars[i + 2..].iter().collect();
            if let Some(end) = rest.find(":]")
                && let Some(f) = class(&rest[..end])
            {
                items.push(SetItem::Class(f));
                i += 2 + rest[..end].chars().count() + 2;
                continue;
            }
        }
        let lo = if c == '\\' {
            i += 1;
            *chars.get(i)?
        } else {
            c
        };
        if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|n| *n != ']') {
            let hi = chars[i + 2];
            items.push(SetItem::Range(lo, hi));
            i += 3;
        } else {
            items.push(SetItem::Range(lo, lo));
            i += 1;
        }
    }
}

impl Glob {
    /// Compiles `pattern`. Every pattern is valid: an unclosed '[' matches itself, as in
    /// fnmatch.
    pub fn new(pattern: &str) -> Glob {
        let chars: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            i += 1;
            let token = match c {
                '*' => {
                    if matches!(tokens.last(), Some(Token::AnyText)) {
                        continue;
                    }
                    Token::AnyText
                }
                '?' => Token::AnyChar,
                '\\' if i < chars.len() => {
                    i += 1;
                    Token::Char(chars[i - 1])
                }
                '[' => match parse_set(&chars, i) {
                    Some((set, next)) => {
                        i = next;
                        set
                    }
                    None => Token::Char('['),
                },
                c => Token::Char(c),
            };
            tokens.push(token);
        }
        Glob { tokens }
    }

    /// Whether the whole of `name` matches.
    pub fn matches(&self, name: &[u8]) -> bool {
        match std::str::from_utf8(name) {
            Ok(s) => self.match_with(name.len(), |at| {
                let c = s[at..].chars().next().expect("at is inside the name");
                (c, c.len_utf8())
            }),
            Err(_) => self.match_with(name.len(), |at| (name[at] as char, 1)),
        }
    }

    /// The classic linear backtracking match: on a mismatch, the last `*` takes one more
    /// character and matching resumes after it.
    fn match_with(&self, len: usize, char_at: impl Fn(usize) -> (char, usize)) -> bool {
        let (mut p, mut n) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        loop {
            if let Some(token) = self.tokens.get(p) {
                if matches!(token, Token::AnyText) {
                    star = Some((p + 1, n));
                    p += 1;
                    continue;
                }
                if n < len {
                    let (c, width) = char_at(n);
                    let ok = match token {
                        Token::Char(t) => *t == c,
                        Token::AnyChar => true,
                        Token::Set { negated, items } => {
                            items.iter().any(|i| i.contains(c)) != *negated
                        }
                        Token::AnyText => unreachable!("handled above"),
                    };
                    if ok {
                        p += 1;
                        n += width;
                        continue;
                    }
                }
            } else if n == len {
                return true;
            }
            match star {
                Some((after, from)) if from < len => {
                    let (_, width) = char_at(from);
                    star = Some((after, from + width));
                    p = after;
                    n = from + width;
                }
                _ => return false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, name: &str) -> bool {
        Glob::new(pattern).matches(name.as_bytes())
    }

    #[test]
    fn stars_and_question_marks() {
        assert!(m("*01*", "f3.101"));
        assert!(m("*01*", "01"));
        assert!(!m("*01*", "f3.10"));
        assert!(m("*", ""));
        assert!(m("*", ".hidden"));
        assert!(m("f?.?", "f1.2"));
        assert!(!m("f?.?", "f1.23"));
        assert!(m("a*b*c", "aXXbYYbZc"));
        assert!(!m("a*b*c", "aXXbYYbZ"));
        assert!(m("**x", "abx"));
        assert!(!m("", "a"));
        assert!(m("", ""));
        assert!(m("exact", "exact"));
        assert!(!m("exact", "exactly"));
    }

    #[test]
    fn sets_ranges_negation_and_classes() {
        assert!(m("f[0-9]", "f7"));
        assert!(!m("f[0-9]", "fa"));
        assert!(m("f[!0-9]", "fa"));
        assert!(m("f[^0-9]", "fa"));
        assert!(!m("f[!0-9]", "f3"));
        assert!(m("[]x]", "]"));
        assert!(m("[a-]", "-"));
        assert!(m("[[:digit:]][[:alpha:]]", "1z"));
        assert!(!m("[[:digit:]]", "z"));
        assert!(m("[abc]*", "cab"));
    }

    #[test]
    fn escapes_and_unclosed_sets_are_literal() {
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "a"));
        assert!(m("a[b", "a[b"));
        assert!(m("[\\]]", "]"));
    }

    #[test]
    fn characters_not_bytes() {
        assert!(m("?", "é"));
        assert!(m("caf?", "café"));
        assert!(m("[é]", "é"));
        // Not UTF-8: byte by byte.
        assert!(Glob::new("a?").matches(b"a\xff"));
        assert!(Glob::new("*").matches(b"\xff\xfe"));
    }
}
