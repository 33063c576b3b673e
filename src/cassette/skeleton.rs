//! The typed-skeleton reader: a trace read straight into fixed slots — top-level fields, one
//! array of 16 values per call, one of 6 per effect — instead of a tree of keyed objects, each
//! record fed to the very checks of [`validate`](super::validate) as it is read and let go
//! with its payloads moved into the typed view, not copied.
//!
//! The text is read a window at a time ([`Window`]): a file's bytes are never all held at
//! once, only the record being read and the typed view being built. A 10,000-call cassette of
//! 3.9 MB used to be held as text, and as 6.6 MB of slots beside it.
//!
//! Reading the shape is all it decides alone: a document with a key it does not expect, an
//! escape in a key, a record that is not one, effects before calls, a size past the limit or
//! bytes that are not UTF-8 are not read, and the caller reads the text the general way.
//! Once read to its end, the skeleton's records have been through the general way's checks,
//! whose verdict and message are the general way's. A valid skeleton whose typed view rebuilds
//! its bytes becomes the cassette; one that does not, or that might exceed the canonical size
//! limit, is the general way's too (it keeps the document's tree).

use std::io::{self, Read};

use super::Cassette;
use super::validate::{
    CALL_SORTED, EFFECT_SORTED, Fed, MAX_TRACE_ITEMS, REPORT_KEYS, TraceCheck, slot,
};
use crate::error::ConfigError;
use crate::json::{MAX_DOCUMENT_BYTES, Reader, Value, canonical_len_bound};

/// Where each value of a document sits: the root is depth 0, its fields 1, a list's records
/// 2 and their fields 3 (what the general parser counts, so its depth limit holds here too).
const FIELD_DEPTH: usize = 1;
const RECORD_FIELD_DEPTH: usize = 3;

/// Where the payloads sit in a call's slots.
const ARGUMENTS: usize = slot(&CALL_SORTED, "arguments");
const OUTPUT: usize = slot(&CALL_SORTED, "output");
/// Where the lists sit among the top-level slots.
const CALLS: usize = slot(&REPORT_KEYS, "calls");
const EFFECTS: usize = slot(&REPORT_KEYS, "effects");

/// The first look at a part of the text, in bytes: enough for a usual record. A part that
/// does not fit is looked at again four times wider.
const FIRST_LOOK: usize = 2048;
/// Bytes a file is read by, at least.
const CHUNK: usize = 64 * 1024;

/// A document's text as the reader sees it: the bytes not yet taken, more on request.
pub(super) trait Window {
    /// The bytes not yet taken.
    fn bytes(&self) -> &[u8];
    /// Takes the first `n` bytes.
    fn take(&mut self, n: usize);
    /// Reads more bytes, `at_least` of them if there are; false at the end of the document.
    fn more(&mut self, at_least: usize) -> io::Result<bool>;
    /// Whether the document is longer than [`MAX_DOCUMENT_BYTES`].
    fn over(&self) -> bool;
    /// How long the document is said to be, in bytes (a file's length when it was opened).
    fn length_hint(&self) -> usize;
}

/// A text already in memory.
pub(super) struct Whole<'t> {
    text: &'t [u8],
    length: usize,
}

impl<'t> Whole<'t> {
    pub(super) fn new(text: &'t str) -> Whole<'t> {
        Whole {
            text: text.as_bytes(),
            length: text.len(),
        }
    }
}

impl Window for Whole<'_> {
    fn bytes(&self) -> &[u8] {
        self.text
    }

    fn take(&mut self, n: usize) {
        self.text = self.text.get(n..).unwrap_or_default();
    }

    fn more(&mut self, _at_least: usize) -> io::Result<bool> {
        Ok(false)
    }

    fn over(&self) -> bool {
        self.length > MAX_DOCUMENT_BYTES
    }

    fn length_hint(&self) -> usize {
        self.length
    }
}

/// A file read a chunk at a time: what is held is the part not yet taken.
pub(super) struct Chunks<R> {
    src: R,
    buf: Vec<u8>,
    /// Where the bytes not yet taken start in `buf`.
    at: usize,
    /// Bytes read so far (at most one past the limit).
    read: usize,
    ended: bool,
    /// The length the file was said to have.
    length: usize,
    /// Bytes to read at a time, at least ([`CHUNK`]; tests cut the text finer).
    chunk: usize,
}

impl<R: Read> Chunks<R> {
    /// `src`, read from its start, said to be `length` bytes long.
    pub(super) fn new(src: R, length: usize) -> Chunks<R> {
        Chunks {
            src,
            buf: Vec::new(),
            at: 0,
            read: 0,
            ended: false,
            length,
            chunk: CHUNK,
        }
    }
}

impl<R: Read> Window for Chunks<R> {
    fn bytes(&self) -> &[u8] {
        self.buf.get(self.at..).unwrap_or_default()
    }

    fn take(&mut self, n: usize) {
        self.at = (self.at + n).min(self.buf.len());
    }

    fn more(&mut self, at_least: usize) -> io::Result<bool> {
        if self.ended {
            return Ok(false);
        }
        self.buf.drain(..self.at);
        self.at = 0;
        // At least as much again as is held.
        let want = self.chunk.max(self.buf.len()).max(at_least);
        let limit = (MAX_DOCUMENT_BYTES + 1 - self.read).min(want);
        let n = (&mut self.src)
            .take(limit as u64)
            .read_to_end(&mut self.buf)?;
        self.read += n;
        self.ended = n == 0 || self.read > MAX_DOCUMENT_BYTES;
        Ok(n > 0)
    }

    fn over(&self) -> bool {
        self.read > MAX_DOCUMENT_BYTES
    }

    fn length_hint(&self) -> usize {
        self.length
    }
}

/// Reads the next part of the text with `part`, which sees a prefix of the bytes not yet
/// taken and reads from its start, ending with a delimiter (so what it read is whole): widened
/// and read further until `part` reads it. `None` when the text ends first or is not UTF-8.
///
/// Each try reads the part from its start again. A part longer than what is held (a record
/// across the end of a chunk) is read again once a chunk more is held; one longer still (a
/// list of 680,000 ordinals in a rule) is read again with eight times as much held, so it
/// costs a few tries, not one per chunk.
fn read_part<W: Window, T>(
    w: &mut W,
    mut part: impl FnMut(&mut Reader<'_>) -> Option<T>,
) -> io::Result<Option<T>> {
    let mut look = FIRST_LOOK;
    let mut reads = 0;
    loop {
        let bytes = w.bytes();
        let seen = &bytes[..look.min(bytes.len())];
        let text = match std::str::from_utf8(seen) {
            Ok(text) => text,
            // A character cut by the edge of the look: the text before it.
            Err(e) if e.error_len().is_none() => {
                std::str::from_utf8(&seen[..e.valid_up_to()]).unwrap_or_default()
            }
            Err(_) => return Ok(None),
        };
        let mut r = Reader::part(text);
        if let Some(found) = part(&mut r) {
            let n = r.offset();
            w.take(n);
            return Ok(Some(found));
        }
        if seen.len() < bytes.len() {
            look = look.saturating_mul(4);
            continue;
        }
        let at_least = if reads == 0 { 0 } else { bytes.len() * 7 };
        reads += 1;
        if !w.more(at_least)? {
            return Ok(None);
        }
        // All that is held, at the next try.
        look = usize::MAX;
    }
}

/// What follows a top-level member.
#[derive(Clone, Copy, PartialEq)]
enum Next {
    Member,
    End,
}

/// The comma before another member, or the closing brace.
fn after_member(r: &mut Reader<'_>) -> Option<Next> {
    if r.eat(b',') {
        Some(Next::Member)
    } else {
        r.eat(b'}').then_some(Next::End)
    }
}

/// A top-level member's start: its key's slot, and its value, or the opening of its list.
enum Head {
    Field(usize, Value, usize, Next),
    EmptyList(usize, Next),
    List(usize),
}

fn head(r: &mut Reader<'_>) -> Option<Head> {
    let key = r.key()?;
    let i = slot_of(&REPORT_KEYS, key)?;
    if i == CALLS || i == EFFECTS {
        if !r.eat(b'[') {
            return None;
        }
        if r.eat(b']') {
            return Some(Head::EmptyList(i, after_member(r)?));
        }
        return r.next_is(b'{').then_some(Head::List(i));
    }
    let mut value = Value::Null;
    let size = field(r, FIELD_DEPTH, &mut value)?;
    Some(Head::Field(i, value, size, after_member(r)?))
}

/// A list's record, its size bound, and what follows it: another record, or the end of the
/// list and what follows the member.
fn item<const N: usize>(
    r: &mut Reader<'_>,
    sorted: &[&str; N],
) -> Option<([Value; N], usize, Option<Next>)> {
    let mut slots: [Value; N] = std::array::from_fn(|_| Value::Null);
    let size = record(r, sorted, &mut slots)?;
    if r.eat(b',') {
        return r.next_is(b'{').then_some((slots, size, None));
    }
    if !r.eat(b']') {
        return None;
    }
    Some((slots, size, Some(after_member(r)?)))
}

/// The cassette a trace's text makes, or why it is not one — the general way's verdict
/// either way; `None` when the text is not one this reader takes (the caller reads it the
/// general way). Errors are the window's own (a file that cannot be read).
pub(super) fn read<W: Window>(w: &mut W) -> io::Result<Option<Result<Cassette, ConfigError>>> {
    let mut top: [Value; REPORT_KEYS.len()] = Default::default();
    let mut given = [false; REPORT_KEYS.len()];
    // Room for as many records as the length could hold: the typed lists are never copied
    // into a bigger allocation as they grow (the old one stays resident a while after).
    let length = w.length_hint().min(MAX_DOCUMENT_BYTES);
    let mut check = TraceCheck::with_capacity(
        (length / record_len(&CALL_SORTED)).min(MAX_TRACE_ITEMS),
        (length / record_len(&EFFECT_SORTED)).min(MAX_TRACE_ITEMS),
    );
    // `{}` and a comma between each of the nine members.
    let mut size = 2 + REPORT_KEYS.len() - 1;
    if read_part(w, |r| r.eat(b'{').then_some(()))?.is_none() {
        return Ok(None);
    }
    loop {
        let Some(found) = read_part(w, head)? else {
            return Ok(None);
        };
        let (i, next) = match found {
            Head::Field(i, value, n, next) => {
                top[i] = value;
                size += n;
                (i, next)
            }
            Head::EmptyList(i, next) => {
                size += 2;
                (i, next)
            }
            Head::List(i) => {
                // Effects are checked against every call, so they come after the calls.
                if i == EFFECTS && !given[CALLS] {
                    return Ok(None);
                }
                let list = if i == CALLS {
                    calls(w, &mut check)?
                } else {
                    effects(w, &mut check)?
                };
                let Some((n, next)) = list else {
                    return Ok(None);
                };
                size += n;
                (i, next)
            }
        };
        if std::mem::replace(&mut given[i], true) {
            return Ok(None);
        }
        size += REPORT_KEYS[i].len() + 3;
        if next == Next::End {
            break;
        }
    }
    // Nothing but whitespace after the root.
    loop {
        let bytes = w.bytes();
        if !bytes
            .iter()
            .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            return Ok(None);
        }
        w.take(bytes.len());
        if !w.more(0)? {
            break;
        }
    }
    if w.over() || !given.iter().all(|g| *g) || size > MAX_DOCUMENT_BYTES {
        return Ok(None);
    }
    match check.finish(|key| {
        static NULL: Value = Value::Null;
        REPORT_KEYS
            .iter()
            .position(|k| *k == key)
            .map_or(&NULL, |i| &top[i])
    }) {
        Err(e) => Ok(Some(Err(e))),
        // The document's bytes are not the typed view's: the general way keeps its tree.
        Ok(checked) if !checked.rebuildable => Ok(None),
        Ok(checked) => Ok(Some(Ok(Cassette {
            report: checked.report,
            data: None,
        }))),
    }
}

/// Reads the calls' records, feeding each to the checks and moving its payloads into its
/// typed view; the list's size bound and what follows it.
fn calls<W: Window>(w: &mut W, check: &mut TraceCheck) -> io::Result<Option<(usize, Next)>> {
    records(w, &CALL_SORTED, |mut slots| {
        if let Fed::Checked(call) = check.call(Ok(&slots)) {
            call.arguments = std::mem::take(&mut slots[ARGUMENTS]);
            call.output = std::mem::take(&mut slots[OUTPUT]);
        }
    })
}

/// Reads the effects' records, feeding each to the checks.
fn effects<W: Window>(w: &mut W, check: &mut TraceCheck) -> io::Result<Option<(usize, Next)>> {
    records(w, &EFFECT_SORTED, |slots| check.effect(Ok(&slots)))
}

/// Reads a list's records (its `[` taken), each with exactly the keys of `sorted`, handing
/// each to `each`; the bound on the list's canonical length, and what follows the list.
fn records<W: Window, const N: usize>(
    w: &mut W,
    sorted: &[&str; N],
    mut each: impl FnMut([Value; N]),
) -> io::Result<Option<(usize, Next)>> {
    let fixed = record_len(sorted);
    let mut size = 2;
    let mut count = 0;
    loop {
        if count == MAX_TRACE_ITEMS {
            return Ok(None);
        }
        let Some((slots, n, next)) = read_part(w, |r| item(r, sorted))? else {
            return Ok(None);
        };
        count += 1;
        size += n + fixed;
        each(slots);
        if let Some(next) = next {
            // A comma between records.
            return Ok(Some((size + count - 1, next)));
        }
    }
}

/// The bytes a record with the keys of `sorted` takes besides its values: `{}`, a comma
/// between fields, each quoted key with its colon.
fn record_len<const N: usize>(sorted: &[&str; N]) -> usize {
    2 + N - 1 + sorted.iter().map(|k| k.len() + 3).sum::<usize>()
}

/// Where `key` sits in a key table.
fn slot_of(table: &[&str], key: &[u8]) -> Option<usize> {
    table.iter().position(|k| k.as_bytes() == key)
}

/// Reads the object that comes next, handing each key to `member`, which reads its value.
fn object<'a>(
    r: &mut Reader<'a>,
    mut member: impl FnMut(&mut Reader<'a>, &'a [u8]) -> Option<()>,
) -> Option<()> {
    if !r.eat(b'{') {
        return None;
    }
    loop {
        let key = r.key()?;
        member(r, key)?;
        if r.eat(b'}') {
            return Some(());
        }
        if !r.eat(b',') {
            return None;
        }
    }
}

/// Reads the value that comes next into `slot`, keys sorted; returns the bound on its
/// canonical length.
fn field(r: &mut Reader<'_>, depth: usize, slot: &mut Value) -> Option<usize> {
    let mut v = r.value(depth)?;
    v.sort_keys().ok()?;
    let size = canonical_len_bound(&v);
    *slot = v;
    Some(size)
}

/// Reads the record that comes next into `slots`: an object with exactly the keys of
/// `sorted`, each once; returns the bound on the canonical length of its values.
fn record<const N: usize>(
    r: &mut Reader<'_>,
    sorted: &[&str; N],
    slots: &mut [Value; N],
) -> Option<usize> {
    let mut size = 0;
    let mut given = 0usize;
    let mut next = 0;
    object(r, |r, key| {
        // Files written sorted (all of them) give the keys in slot order.
        let i = match sorted.get(next) {
            Some(k) if k.as_bytes() == key => next,
            _ => slot_of(sorted, key)?,
        };
        next = i + 1;
        if given & (1 << i) != 0 {
            return None;
        }
        given |= 1 << i;
        size += field(r, RECORD_FIELD_DEPTH, &mut slots[i])?;
        Some(())
    })?;
    (given == (1 << N) - 1).then_some(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source handing out at most `step` bytes per read, whatever is asked.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    type Verdict = Option<Result<(String, String), String>>;

    /// What the reader made of a text: the cassette's bytes and digest, or its error.
    fn verdict(read: io::Result<Option<Result<Cassette, ConfigError>>>) -> Verdict {
        read.expect("no read error").map(|v| {
            v.map(|c| (c.dumps(), c.digest()))
                .map_err(|e| e.to_string())
        })
    }

    fn whole(text: &str) -> Verdict {
        verdict(read(&mut Whole::new(text)))
    }

    fn in_pieces(text: &str, chunk: usize, step: usize) -> Verdict {
        let src = Trickle {
            bytes: text.as_bytes(),
            step,
        };
        let mut w = Chunks::new(src, text.len());
        w.chunk = chunk;
        verdict(read(&mut w))
    }

    const CALL: &str = r##"{"arguments":{"note":"NOTE"},"capture_error":false,"elapsed":0.5,"error":null,"executed":true,"fault":null,"id":ID,"injected":false,"key":"#ID","kind":null,"ordinal":ID,"output":{"n":12345.678,"big":123456789012345678901234567890,"ok":true},"parent_id":null,"started":0.0,"status":"ok","tool":"t"}"##;

    /// A valid trace of `n` calls whose notes hold `note` (multi-byte characters, so a cut can
    /// fall inside one).
    fn trace(n: usize, note: &str) -> String {
        let calls: Vec<String> = (1..=n)
            .map(|i| CALL.replace("ID", &i.to_string()).replace("NOTE", note))
            .collect();
        format!(
            r#"{{"budget_rejections":0,"calls":[{}],"capture":true,"clock":"VirtualClock","coverage":{{}},"effects":[{{"at":0.25,"call_id":1,"identity":1,"key":"k","name":"charge","redacted":false}}],"rules":[],"schema_version":1,"seed":1}}"#,
            calls.join(",\n ")
        )
    }

    #[test]
    fn a_text_read_in_pieces_reads_as_a_whole() {
        let texts = [
            trace(3, "é 日本 😀"),
            trace(40, &"😀é".repeat(20)),
            // One record longer than many pieces.
            trace(2, &"日本".repeat(5000)),
            // Invalid: the second call's id.
            trace(3, "x").replacen(r#""id":2"#, r#""id":7"#, 1),
        ];
        for text in &texts {
            let expected = whole(text);
            assert!(expected.is_some(), "{expected:?}");
            for chunk in [1, 2, 3, 5, 8, 13, 64, 1000, CHUNK] {
                for step in [1, 7, usize::MAX] {
                    assert_eq!(in_pieces(text, chunk, step), expected, "{chunk}/{step}");
                }
            }
        }
        assert!(matches!(whole(&texts[0]), Some(Ok(_))));
        assert!(matches!(whole(&texts[3]), Some(Err(_))));
    }

    #[test]
    fn the_large_reference_trace_reads_alike_in_any_pieces() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/reference/api/large_public_10000.cassette.json"
        );
        let text = std::fs::read_to_string(path).expect("fixture");
        let expected = whole(&text);
        assert!(matches!(expected, Some(Ok(_))));
        for chunk in [97, 4096, CHUNK] {
            assert_eq!(in_pieces(&text, chunk, usize::MAX), expected, "{chunk}");
        }
    }

    #[test]
    fn what_a_window_cannot_settle_is_left_to_the_general_way() {
        let text = trace(2, "é");
        // Cut short, anywhere.
        for end in [1, 40, text.len() / 2, text.len() - 1] {
            let cut = &text.as_bytes()[..end];
            let mut w = Chunks::new(cut, cut.len());
            w.chunk = 16;
            assert_eq!(verdict(read(&mut w)), None, "{end}");
        }
        // Not UTF-8 after the first window: a character's second byte spoilt.
        let mut bytes = text.clone().into_bytes();
        let last = text.rfind('é').expect("a note") + 1;
        bytes[last] = 0xff;
        let mut w = Chunks::new(&bytes[..], bytes.len());
        w.chunk = 16;
        assert_eq!(verdict(read(&mut w)), None);
        // Effects before the calls they name.
        let effects = r#""effects":[{"at":0.25,"call_id":1,"identity":1,"key":"k","name":"charge","redacted":false}],"#;
        let moved = text.replacen(effects, "", 1).replacen(
            r#""calls":"#,
            &format!(r#"{effects}"calls":"#),
            1,
        );
        assert_ne!(moved, text);
        assert_eq!(whole(&moved), None);
        // Past the size limit, even if only by whitespace.
        let padded = format!("{text}{}", " ".repeat(MAX_DOCUMENT_BYTES));
        let mut w = Chunks::new(padded.as_bytes(), padded.len());
        assert_eq!(verdict(read(&mut w)), None);
        assert!(w.over());
        // Whitespace after the root is fine within it.
        assert_eq!(whole(&format!("{text} \n")), whole(&text));
    }
}
