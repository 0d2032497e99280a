//! How wide chart text is drawn, computed without a browser: [`text_width`] sums the
//! advances of DejaVu Sans glyphs (the font the page's font stack falls back to on Linux,
//! and wider than the system fonts it prefers elsewhere, so the estimate errs on the wide
//! side); [`wrap`] breaks a title into lines that fit a width.

/// Advances of DejaVu Sans Bold in em, as Chromium measures them: a-z, A-Z.
const LOWER: [f64; 26] = [
    0.675, 0.716, 0.593, 0.716, 0.678, 0.405, 0.716, 0.712, 0.343, 0.343, 0.665, 0.343, 1.042,
    0.712, 0.687, 0.716, 0.716, 0.493, 0.595, 0.478, 0.712, 0.652, 0.924, 0.645, 0.652, 0.582,
];
const UPPER: [f64; 26] = [
    0.774, 0.762, 0.734, 0.830, 0.683, 0.683, 0.821, 0.837, 0.372, 0.372, 0.775, 0.637, 0.995,
    0.837, 0.850, 0.733, 0.850, 0.770, 0.678, 0.682, 0.812, 0.774, 1.103, 0.771, 0.724, 0.725,
];

/// Regular glyphs are this share of the bold ones at most (0.91-0.95 measured).
const REGULAR: f64 = 0.95;

/// The advance of `c` in em, bold.
fn advance(c: char) -> f64 {
    match c {
        'a'..='z' => LOWER[c as usize - 'a' as usize],
        'A'..='Z' => UPPER[c as usize - 'A' as usize],
        '0'..='9' => 0.696,
        ' ' => 0.348,
        '.' | ',' | '·' => 0.380,
        ':' | ';' => 0.400,
        '-' => 0.415,
        '(' | ')' | '[' | ']' => 0.457,
        '_' => 0.500,
        '/' | '|' => 0.365,
        '\'' | '"' => 0.306,
        'µ' => 0.736,
        '%' => 1.002,
        // = + < > # and anything else: as wide as the widest common glyphs.
        _ => 0.84,
    }
}

/// The drawn width of `text` in pixels at `font_px`, bold or regular.
pub fn text_width(text: &str, font_px: f64, bold: bool) -> f64 {
    let em: f64 = text.chars().map(advance).sum();
    em * font_px * if bold { 1.0 } else { REGULAR }
}

/// `text` in lines no wider than `max_px` at `font_px` bold: broken at spaces, a word
/// wider than a line broken inside it.
pub fn wrap(text: &str, max_px: f64, font_px: f64) -> Vec<String> {
    let fits = |s: &str| text_width(s, font_px, true) <= max_px;
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let joined = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if fits(&joined) {
            line = joined;
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        // A word too wide for a line of its own is cut where it stops fitting.
        for c in word.chars() {
            line.push(c);
            if !fits(&line) {
                line.pop();
                lines.push(std::mem::take(&mut line));
                line.push(c);
            }
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_follow_the_glyphs() {
        // "ii" is narrower than "mm"; 20 digits at 15 px bold: 20 x 0.696 x 15.
        assert!(text_width("ii", 15.0, true) < text_width("mm", 15.0, true));
        assert!((text_width(&"0".repeat(20), 15.0, true) - 208.8).abs() < 1e-9);
        assert!(text_width("abc", 12.0, false) < text_width("abc", 12.0, true));
    }

    #[test]
    fn titles_wrap_at_spaces_and_every_line_fits() {
        let title = "async-seq-write [block_size=128KiB] at 64 threads: device await (queueing included) on vm";
        let lines = wrap(title, 300.0, 15.0);
        assert!(lines.len() >= 3, "{lines:?}");
        assert_eq!(lines.join(" "), title);
        for l in &lines {
            assert!(text_width(l, 15.0, true) <= 300.0, "{l}");
        }
        assert_eq!(wrap("short", 300.0, 15.0), ["short"]);
        // One long word is cut, nothing lost.
        let long = "x".repeat(80);
        let cut = wrap(&long, 100.0, 15.0);
        assert_eq!(cut.concat(), long);
        assert!(cut.iter().all(|l| text_width(l, 15.0, true) <= 100.0));
        assert_eq!(wrap("", 100.0, 15.0), [""]);
    }
}
