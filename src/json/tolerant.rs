//! Walking text that is meant to be JSON without reading it: where a string, a value or the
//! space between them ends. Nothing here fails: text that breaks off ends its value at the end
//! of the bytes. The wire finds a message's members this way, and redaction finds secret keys
//! in an answer kept raw because it could not be parsed.

/// The index of the first byte at or after `i` that is not JSON white space.
pub(crate) fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while bytes
        .get(i)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    {
        i += 1;
    }
    i
}

/// The index just past the string starting at `i` (a `"`).
pub(crate) fn string_end(bytes: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < bytes.len() {
        // Plain bytes are skipped a word at a time; a control character is stepped over.
        j = super::string_run_end(bytes, j);
        match bytes.get(j) {
            Some(b'\\') => j += 2,
            Some(b'"') => return Some(j + 1),
            Some(_) => j += 1,
            None => break,
        }
    }
    None
}

/// The index just past the value starting at `i` (or the end of `bytes`).
pub(crate) fn value_end(bytes: &[u8], i: usize) -> usize {
    match bytes.get(i) {
        Some(b'"') => string_end(bytes, i).unwrap_or(bytes.len()),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < bytes.len() {
                match bytes[j] {
                    b'"' => {
                        j = string_end(bytes, j).unwrap_or(bytes.len());
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            bytes.len()
        }
        _ => {
            let mut j = i;
            while j < bytes.len()
                && !matches!(bytes[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')
            {
                j += 1;
            }
            j
        }
    }
}
