//! The typed-skeleton reader: a trace file read straight into fixed slots — top-level fields,
//! one array of 16 values per call, one of 6 per effect — instead of a tree of keyed objects,
//! then put through the very checks of [`validate`](super::validate) and turned into a
//! [`Cassette`] with its payloads moved, not copied.
//!
//! Reading the shape is all it decides alone: a document with a key it does not expect, an
//! escape in a key or a record that is not one is not read, and the caller parses the text
//! the general way. Once read, the skeleton goes through the general way's checks, in its
//! order, so their verdict and message are the general way's. A valid skeleton whose typed
//! view rebuilds its bytes becomes the cassette at once; one that does not, or that might
//! exceed the canonical size limit, becomes the very tree the general parser would have
//! built. Either way the text itself is not needed again.

use super::Cassette;
use super::validate::{
    CALL_SORTED, EFFECT_SORTED, MAX_TRACE_ITEMS, REPORT_KEYS, Source, check_trace, slot,
};
use crate::error::ConfigError;
use crate::json::{MAX_DOCUMENT_BYTES, Reader, Text, Value, canonical_len_bound};

/// Where each value of a document sits: the root is depth 0, its fields 1, a list's records
/// 2 and their fields 3 (what the general parser counts, so its depth limit holds here too).
const FIELD_DEPTH: usize = 1;
const RECORD_FIELD_DEPTH: usize = 3;

/// A trace read into slots.
pub(super) struct Skeleton {
    /// The top-level fields other than the lists, in [`REPORT_KEYS`] order.
    top: [Value; REPORT_KEYS.len()],
    /// Each record boxed: the list grows by pointers, so its spare capacity (half the list
    /// at worst, and the old and new buffers at once while it grows) is pointers too, not
    /// records (a 10,000-call cassette's `check` peaked 6 MB higher under mimalloc).
    #[allow(clippy::vec_box)] // deliberate: see above
    calls: Vec<Box<[Value; CALL_SORTED.len()]>>,
    #[allow(clippy::vec_box)]
    effects: Vec<Box<[Value; EFFECT_SORTED.len()]>>,
    /// An upper bound on the canonical length of the document.
    size: usize,
}

impl Source for Skeleton {
    type Call = [Value; CALL_SORTED.len()];
    type Effect = [Value; EFFECT_SORTED.len()];

    fn top(&self, key: &str) -> &Value {
        static NULL: Value = Value::Null;
        REPORT_KEYS
            .iter()
            .position(|k| *k == key)
            .map_or(&NULL, |i| &self.top[i])
    }

    fn calls(&self) -> Result<usize, ConfigError> {
        Ok(self.calls.len())
    }

    fn call(&self, i: usize) -> Result<&Self::Call, ConfigError> {
        self.calls.get(i).map(|c| &**c).ok_or_else(missing)
    }

    fn effects(&self) -> Result<usize, ConfigError> {
        Ok(self.effects.len())
    }

    fn effect(&self, i: usize) -> Result<&Self::Effect, ConfigError> {
        self.effects.get(i).map(|e| &**e).ok_or_else(missing)
    }
}

/// Only asked for indexes below the count; an error rather than a panic all the same.
fn missing() -> ConfigError {
    ConfigError::new("Missing required document fields")
}

impl Skeleton {
    /// The cassette, or why the document is not one — the general way's verdict either way.
    /// Within the size bound, the general way would run exactly these checks on exactly these
    /// values, so their verdict is its verdict; past the bound only the exact measure can
    /// tell, and the general way takes the document.
    pub(super) fn into_cassette(mut self) -> Result<Cassette, ConfigError> {
        if self.size > MAX_DOCUMENT_BYTES {
            return Cassette::from_parsed(self.into_value());
        }
        let checked = check_trace(&self)?;
        if !checked.rebuildable {
            return Ok(Cassette::assemble(checked, self.into_value()));
        }
        let mut report = checked.report;
        for (call, record) in report.calls.iter_mut().zip(&mut self.calls) {
            call.arguments = std::mem::take(&mut record[ARGUMENTS]);
            call.output = std::mem::take(&mut record[OUTPUT]);
        }
        Ok(Cassette { report, data: None })
    }

    /// The document as the general parser builds it (keys in canonical order).
    fn into_value(self) -> Value {
        fn record<const N: usize>(keys: &[&str; N], values: [Value; N]) -> Value {
            Value::Object(keys.iter().map(|k| Text::from(*k)).zip(values).collect())
        }
        let Skeleton {
            mut top,
            calls,
            effects,
            ..
        } = self;
        top[CALLS] = Value::Array(
            calls
                .into_iter()
                .map(|c| record(&CALL_SORTED, *c))
                .collect(),
        );
        top[EFFECTS] = Value::Array(
            effects
                .into_iter()
                .map(|e| record(&EFFECT_SORTED, *e))
                .collect(),
        );
        let mut value = record(&REPORT_KEYS, top);
        // The skeleton's keys are unique, so sorting cannot fail.
        let _ = value.sort_keys();
        value
    }
}

/// Where the payloads sit in a call's slots.
const ARGUMENTS: usize = slot(&CALL_SORTED, "arguments");
const OUTPUT: usize = slot(&CALL_SORTED, "output");
/// Where the lists sit among the top-level slots.
const CALLS: usize = slot(&REPORT_KEYS, "calls");
const EFFECTS: usize = slot(&REPORT_KEYS, "effects");

/// Where `key` sits in a key table.
fn slot_of(table: &[&str], key: &[u8]) -> Option<usize> {
    table.iter().position(|k| k.as_bytes() == key)
}

/// A trace's shape read from `text` into slots: every key known and given once, records
/// complete, lists within their limits, nothing after the root. `None` when `text` is not
/// shaped so (the general parser then reads it).
pub(super) fn read(text: &str) -> Option<Skeleton> {
    let mut r = Reader::new(text)?;
    let mut top: [Value; REPORT_KEYS.len()] = Default::default();
    let mut given = [false; REPORT_KEYS.len()];
    let mut calls = Vec::new();
    let mut effects = Vec::new();
    // `{}` and a comma between each of the nine members.
    let mut size = 2 + REPORT_KEYS.len() - 1;
    object(&mut r, |r, key| {
        let i = slot_of(&REPORT_KEYS, key)?;
        if std::mem::replace(&mut given[i], true) {
            return None;
        }
        size += key.len() + 3;
        size += match key {
            b"calls" => records(r, &CALL_SORTED, &mut calls)?,
            b"effects" => records(r, &EFFECT_SORTED, &mut effects)?,
            _ => field(r, FIELD_DEPTH, &mut top[i])?,
        };
        Some(())
    })?;
    (r.at_end() && given.iter().all(|g| *g)).then_some(Skeleton {
        top,
        calls,
        effects,
        size,
    })
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

/// Reads a list of records with exactly the keys of `sorted` into `out`; returns the bound on
/// the list's canonical length.
fn records<const N: usize>(
    r: &mut Reader<'_>,
    sorted: &[&str; N],
    #[allow(clippy::vec_box)] out: &mut Vec<Box<[Value; N]>>,
) -> Option<usize> {
    if !r.eat(b'[') {
        return None;
    }
    if r.eat(b']') {
        return Some(2);
    }
    // `[]`, and per record `{}`, a comma between fields, each quoted key with its colon.
    let mut size = 2;
    let fixed = 2 + N - 1 + sorted.iter().map(|k| k.len() + 3).sum::<usize>();
    loop {
        if out.len() == MAX_TRACE_ITEMS {
            return None;
        }
        let mut record: [Value; N] = std::array::from_fn(|_| Value::Null);
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
            size += field(r, RECORD_FIELD_DEPTH, &mut record[i])?;
            Some(())
        })?;
        if given != (1 << N) - 1 {
            return None;
        }
        size += fixed;
        out.push(Box::new(record));
        if r.eat(b']') {
            // A comma between records.
            return Some(size + out.len() - 1);
        }
        if !r.eat(b',') {
            return None;
        }
    }
}
