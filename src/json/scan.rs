//! Finding where a run of plain string bytes ends: the parser, the encoder and the wire's raw
//! scanner spend most of their time walking long strings whose bytes need nothing done to
//! them (a kilobyte of tool output). A string's first bytes are tested a word (eight bytes)
//! at a time, most strings (keys, names, ids) ending there; past them, blocks of 64 bytes are
//! judged without a branch, which the compiler turns into vector code, and what is left of
//! the text goes a word at a time again. Only the last few bytes go one by one.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Non-zero when some byte of `word` is zero. (Like [`has_below`], it may flag bytes above a
/// zero byte too: it answers only "is there one", and the caller finds which by looking.)
fn has_zero(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}

/// Non-zero when some byte of `word` is below `n` (`n` at most 128).
fn has_below(word: u64, n: u8) -> u64 {
    word.wrapping_sub(ONES * u64::from(n)) & !word & HIGHS
}

/// Non-zero when some byte of `word` is a quote, a backslash or a control character.
fn has_special(word: u64) -> u64 {
    has_zero(word ^ (ONES * u64::from(b'"')))
        | has_zero(word ^ (ONES * u64::from(b'\\')))
        | has_below(word, 0x20)
}

/// Non-zero when some byte of `word` is 0x7f or above: its high bit, or the one adding one
/// gives it (a carry out of an 0xff byte can only follow a byte already flagged).
fn has_wide(word: u64) -> u64 {
    (word | word.wrapping_add(ONES)) & HIGHS
}

fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    let chunk: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(chunk))
}

/// Bytes tested word by word before whole blocks take over: most strings (keys, names, ids)
/// end within them, and a block costs more than it saves on so short a run.
const SHORT: usize = 32;

/// The index of the first byte at or after `from` that is a quote, a backslash or a control
/// character (below 0x20), or `bytes.len()`: where a string's plain run ends.
pub(crate) fn string_run_end(bytes: &[u8], from: usize) -> usize {
    plain_run_end(bytes, from).0
}

/// [`string_run_end`], and whether the run holds printable ASCII only (no byte of 0x7f or
/// above): the parser notes it on the text, so encoding it later needs no second look.
pub(crate) fn plain_run_end(bytes: &[u8], from: usize) -> (usize, bool) {
    if from >= bytes.len() {
        return (from, true);
    }
    let (i, wide, stopped) = walk_words(bytes, from, from + SHORT);
    if stopped || i < from + SHORT {
        return run_from(bytes, i, wide);
    }
    // Whole blocks, each judged without a branch (the compiler makes it vector code); then
    // words again, through the block that holds the run's end or the bytes after the last.
    let mut i = i;
    let mut wide = wide;
    while let Some(block) = bytes.get(i..i + BLOCK) {
        let (special, high) = block_flags(block);
        if special {
            break;
        }
        wide |= u64::from(high);
        i += BLOCK;
    }
    let (i, more, _) = walk_words(bytes, i, usize::MAX);
    run_from(bytes, i, wide | more)
}

/// Walks whole words from `i` (below `limit`) while none holds a quote, a backslash or a
/// control character: where it stopped, the wide bytes seen (non-zero when some byte was
/// 0x7f or above), and whether a word with a special byte stopped it.
fn walk_words(bytes: &[u8], mut i: usize, limit: usize) -> (usize, u64, bool) {
    let mut wide = 0;
    while i < limit
        && let Some(word) = word_at(bytes, i)
    {
        if has_special(word) != 0 {
            return (i, wide, true);
        }
        wide |= has_wide(word);
        i += 8;
    }
    (i, wide, false)
}

/// The run's end from `i`, and whether it is plain (`wide`: what the bytes before `i` said).
/// When the word at `i` holds a special byte (the walk stopped there), its lowest flagged
/// byte is the first special one: a flag can be false only above a true one, where a borrow
/// reaches. Fewer than eight bytes left go one by one.
fn run_from(bytes: &[u8], i: usize, wide: u64) -> (usize, bool) {
    if let Some(word) = word_at(bytes, i) {
        let special = has_special(word);
        if special != 0 {
            let k = (special.trailing_zeros() / 8) as usize;
            // The bytes before the special one (a carry flags a byte only after a flagged one).
            let before = u64::MAX.checked_shr(64 - 8 * k as u32).unwrap_or(0);
            return (i + k, wide | (has_wide(word) & before) == 0);
        }
    }
    let end = first_special(bytes, i);
    (end, wide == 0 && bytes[i..end].iter().all(|&b| b < 0x7f))
}

/// Bytes judged at once by [`block_flags`].
const BLOCK: usize = 64;

/// Whether `block` holds a quote, a backslash or a control character, and whether it holds a
/// byte of 0x7f or above. Every byte is looked at, with no early exit: that is what lets the
/// loop become a few vector instructions per sixteen bytes.
fn block_flags(block: &[u8]) -> (bool, bool) {
    let (mut special, mut high) = (0u8, 0u8);
    for &b in block {
        special |= u8::from(b < 0x20) | u8::from(b == b'"') | u8::from(b == b'\\');
        high |= u8::from(b >= 0x7f);
    }
    (special != 0, high != 0)
}

/// The first quote, backslash or control character at or after `i`, byte by byte.
fn first_special(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && !matches!(bytes[i], b'"' | b'\\' | 0..0x20) {
        i += 1;
    }
    i
}

/// Whether every byte is printable ASCII other than a quote or a backslash: text a JSON
/// string literal (with Python's `ensure_ascii`) holds exactly as it is.
pub(crate) fn is_plain_ascii(bytes: &[u8]) -> bool {
    let blocks = bytes.chunks_exact(BLOCK);
    let rest = blocks.remainder();
    // Whole blocks without an early exit inside one (see [`block_flags`]); the rest a word
    // at a time, then byte by byte.
    for block in blocks {
        if block_flags(block) != (false, false) {
            return false;
        }
    }
    let mut i = 0;
    while let Some(word) = word_at(rest, i) {
        if has_special(word) | has_wide(word) != 0 {
            return false;
        }
        i += 8;
    }
    rest[i..]
        .iter()
        .all(|b| (0x20..0x7f).contains(b) && *b != b'"' && *b != b'\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow_run_end(bytes: &[u8], from: usize) -> usize {
        (from..bytes.len())
            .find(|&i| matches!(bytes[i], b'"' | b'\\' | 0..0x20))
            .unwrap_or(bytes.len())
    }

    fn slow_plain(bytes: &[u8]) -> bool {
        bytes
            .iter()
            .all(|&b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    }

    #[test]
    fn every_byte_value_at_every_position_of_a_word_is_judged_as_a_byte_loop_judges_it() {
        for len in [
            0usize, 1, 7, 8, 9, 15, 16, 17, 31, 33, 64, 95, 96, 97, 100, 200,
        ] {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    assert_eq!(
                        string_run_end(&bytes, 0),
                        slow_run_end(&bytes, 0),
                        "run end: byte {b:#x} at {at} of {len}"
                    );
                    assert_eq!(
                        is_plain_ascii(&bytes),
                        slow_plain(&bytes),
                        "plain: byte {b:#x} at {at} of {len}"
                    );
                    // From the start, and from one byte in (blocks then start off a
                    // word's edge).
                    for from in [0, 1.min(len)] {
                        let end = slow_run_end(&bytes, from);
                        assert_eq!(
                            plain_run_end(&bytes, from),
                            (end, slow_plain(&bytes[from..end])),
                            "plain run from {from}: byte {b:#x} at {at} of {len}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_run_from_the_end_or_past_it_is_empty() {
        for from in [3, 4, 9] {
            assert_eq!(string_run_end(b"abc", from), from);
            assert_eq!(plain_run_end(b"abc", from), (from, true));
        }
    }

    #[test]
    fn a_wide_byte_and_a_special_one_far_apart_are_both_seen() {
        // Past the first words: a wide byte in one block and the run's end in a later one,
        // or both in the block that holds the end, in either order.
        let (len, positions) = (300, [0, 31, 32, 40, 95, 96, 100, 159, 160, 250, 299]);
        for &w in &positions {
            for &s in &positions {
                for (wide, special) in [(0x80u8, b'"'), (0x7f, 0x00), (0xff, b'\\')] {
                    let mut bytes = vec![b'y'; len];
                    bytes[w] = wide;
                    if s != w {
                        bytes[s] = special;
                    }
                    for from in [0, 1, 33] {
                        let end = slow_run_end(&bytes, from);
                        assert_eq!(
                            plain_run_end(&bytes, from),
                            (end, slow_plain(&bytes[from..end])),
                            "wide {wide:#x} at {w}, special {special:#x} at {s}, from {from}"
                        );
                    }
                    assert!(!is_plain_ascii(&bytes));
                }
            }
        }
    }

    #[test]
    fn any_two_bytes_near_each_other_are_judged_as_a_byte_loop_judges_them() {
        // Within a word or across two, from every offset: a wide byte before the run's end
        // makes it not plain, one after it does not; a special byte after the first is not
        // seen; a carry or a borrow from one byte does not flag its neighbour.
        let values = [
            0x00u8, 0x1f, 0x20, b'"', b'\\', b'a', 0x7e, 0x7f, 0x80, 0xc3, 0xfe, 0xff,
        ];
        for len in [24usize, 80] {
            for i in 0..20 {
                for j in i + 1..21 {
                    for &a in &values {
                        for &b in &values {
                            let mut bytes = vec![b'q'; len];
                            bytes[i] = a;
                            bytes[j] = b;
                            for from in 0..9 {
                                let end = slow_run_end(&bytes, from);
                                assert_eq!(
                                    plain_run_end(&bytes, from),
                                    (end, slow_plain(&bytes[from..end])),
                                    "{a:#x} at {i}, {b:#x} at {j}, from {from} of {len}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn two_special_bytes_in_one_word_stop_at_the_first() {
        // A byte below a special one must not hide it, nor the borrow from one make another.
        for (a, b) in [(0xffu8, b'"'), (0x00, 0x01), (b'\\', 0x7f), (0x80, 0x00)] {
            for i in 0..8 {
                for j in i + 1..8 {
                    let mut bytes = vec![b'x'; 16];
                    bytes[i] = a;
                    bytes[j] = b;
                    assert_eq!(string_run_end(&bytes, 0), slow_run_end(&bytes, 0));
                    assert_eq!(string_run_end(&bytes, i + 1), slow_run_end(&bytes, i + 1));
                    let end = slow_run_end(&bytes, i + 1);
                    assert_eq!(
                        plain_run_end(&bytes, i + 1),
                        (end, slow_plain(&bytes[i + 1..end]))
                    );
                    assert!(!is_plain_ascii(&bytes));
                }
            }
        }
    }
}
