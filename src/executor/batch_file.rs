//! Reads back the batches an executor's `run --output` file holds (what
//! [`BatchResult::to_value`] wrote), so the explorer draws a saved run's lanes as it draws a
//! live one's. The envelopes behind the outputs are not in the file: a read batch has none.

use super::batch::{AttemptLane, BatchResult, Lane, LogRow};
use crate::error::ConfigError;
use crate::json::{Object, Value};

fn bad(at: &str, what: &str) -> ConfigError {
    ConfigError::new("Invalid run output")
        .at(at.to_owned())
        .because(what.to_owned())
}

fn object<'a>(v: &'a Value, at: &str) -> Result<&'a Object, ConfigError> {
    v.as_object().ok_or_else(|| bad(at, "expected an object"))
}

fn ms(o: &Object, key: &str, at: &str) -> Result<u64, ConfigError> {
    o.get(key)
        .and_then(Value::as_i64)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| bad(&format!("{at}.{key}"), "expected a whole number ≥ 0"))
}

fn text(o: &Object, key: &str, at: &str) -> Result<String, ConfigError> {
    o.get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| bad(&format!("{at}.{key}"), "expected a string"))
}

fn list<'a>(o: &'a Object, key: &str, at: &str) -> Result<&'a [Value], ConfigError> {
    o.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .ok_or_else(|| bad(&format!("{at}.{key}"), "expected a list"))
}

/// Each item of the list `key`, read by `read` (told where the item is).
fn each<T>(
    o: &Object,
    key: &str,
    at: &str,
    read: fn(&Value, &str) -> Result<T, ConfigError>,
) -> Result<Vec<T>, ConfigError> {
    list(o, key, at)?
        .iter()
        .enumerate()
        .map(|(i, item)| read(item, &format!("{at}.{key}[{i}]")))
        .collect()
}

fn attempt(v: &Value, at: &str) -> Result<AttemptLane, ConfigError> {
    let o = object(v, at)?;
    let (queued_ms, started_ms) = (ms(o, "queued_ms", at)?, ms(o, "started_ms", at)?);
    if started_ms < queued_ms {
        return Err(bad(
            &format!("{at}.started_ms"),
            "expected no earlier than queued_ms",
        ));
    }
    Ok(AttemptLane {
        number: u32::try_from(ms(o, "number", at)?)
            .map_err(|_| bad(&format!("{at}.number"), "expected an attempt number"))?,
        queued_ms,
        started_ms,
        ended_ms: ms(o, "ended_ms", at)?,
        outcome: text(o, "outcome", at)?,
        fault: o.get("fault").and_then(Value::as_str).map(str::to_owned),
        report_call: o
            .get("report_call")
            .and_then(Value::as_i64)
            .and_then(|n| u64::try_from(n).ok()),
        late: o.get("late").and_then(Value::as_bool).unwrap_or(false),
    })
}

fn lane(v: &Value, at: &str) -> Result<Lane, ConfigError> {
    let o = object(v, at)?;
    let approval = match o.get("approval") {
        None | Some(Value::Null) => None,
        Some(a) => {
            let a = object(a, &format!("{at}.approval"))?;
            Some((
                text(a, "question", &format!("{at}.approval"))?,
                a.get("approved").and_then(Value::as_bool).unwrap_or(false),
            ))
        }
    };
    let attempts = each(o, "attempts", at, attempt)?;
    Ok(Lane {
        index: usize::try_from(ms(o, "index", at)?)
            .map_err(|_| bad(&format!("{at}.index"), "expected a position"))?,
        call_id: text(o, "call_id", at)?,
        name: text(o, "name", at)?,
        submitted_ms: ms(o, "submitted_ms", at)?,
        approval,
        deadline_ms: o
            .get("deadline_ms")
            .and_then(Value::as_i64)
            .and_then(|n| u64::try_from(n).ok()),
        attempts,
        answered_ms: ms(o, "answered_ms", at)?,
        kind: text(o, "kind", at)?,
    })
}

fn log_row(v: &Value, at: &str) -> Result<LogRow, ConfigError> {
    let o = object(v, at)?;
    Ok(LogRow {
        call_id: text(o, "call_id", at)?,
        name: text(o, "name", at)?,
        kind: text(o, "kind", at)?,
        ms: ms(o, "ms", at)?,
        attempts: u32::try_from(ms(o, "attempts", at)?)
            .map_err(|_| bad(&format!("{at}.attempts"), "expected a count"))?,
    })
}

/// One batch of a run output (`at` names it in messages).
pub fn batch(v: &Value, at: &str) -> Result<BatchResult, ConfigError> {
    let o = object(v, at)?;
    let started_ms = ms(o, "started_ms", at)?;
    let answered_ms = ms(o, "answered_ms", at)?;
    if answered_ms < started_ms {
        return Err(bad(
            &format!("{at}.answered_ms"),
            "expected no earlier than started_ms",
        ));
    }
    let lanes = each(o, "lanes", at, lane)?;
    let log = each(o, "log", at, log_row)?;
    Ok(BatchResult {
        batch: usize::try_from(ms(o, "batch", at)?)
            .map_err(|_| bad(&format!("{at}.batch"), "expected a batch number"))?,
        started_ms,
        outputs: list(o, "outputs", at)?.to_vec(),
        envelopes: Vec::new(),
        log,
        lanes,
        answered_ms,
        settled_ms: ms(o, "settled_ms", at)?,
    })
}

/// The batches of a run output's `batches` list; none when it has no such list.
pub fn batches(output: &Value) -> Result<Vec<BatchResult>, ConfigError> {
    match output.as_object().and_then(|o| o.get("batches")) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, b)| batch(b, &format!("batches[{i}]")))
            .collect(),
        Some(_) => Err(bad("batches", "expected a list of batches")),
    }
}
