//! Recovery policies (spec §13.2): application code on top of the engine, which never
//! retries by itself. `optimistic` tries once; `retry` tries three times at once, whatever
//! failed; `resilient` validates inventory, backs off (or honours `retry_after`) and reuses a
//! stable idempotency key.

use std::fmt;

use super::shipping::ShippingTools;
use crate::error::{Error, Result};
use crate::json::Value;
use crate::obj;

/// A recovery policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// One attempt per operation, no validation.
    Optimistic,
    /// Up to three immediate attempts, fresh write each time.
    Retry,
    /// Validated, backed-off retries with a stable write key.
    Resilient,
}

impl Policy {
    /// All policies, in the reference's comparison order.
    pub const ALL: [Policy; 3] = [Policy::Optimistic, Policy::Retry, Policy::Resilient];

    /// Command-line name.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Optimistic => "optimistic",
            Policy::Retry => "retry",
            Policy::Resilient => "resilient",
        }
    }

    /// Parses a command-line name.
    pub fn parse(s: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// Display name (`Validated retries`).
    pub fn title(self) -> &'static str {
        match self {
            Policy::Optimistic => "No retries",
            Policy::Retry => "Unchecked retries",
            Policy::Resilient => "Validated retries",
        }
    }

    /// One-sentence description.
    pub fn description(self) -> &'static str {
        match self {
            Policy::Optimistic => "One attempt per operation. No output validation.",
            Policy::Retry => "Up to 3 attempts. No validation or idempotency.",
            Policy::Resilient => "Validate outputs, back off, and reuse write keys.",
        }
    }

    /// Short summary.
    pub fn summary(self) -> &'static str {
        match self {
            Policy::Optimistic => "No retries \u{b7} no validation",
            Policy::Retry => "3 attempts \u{b7} fresh write each time",
            Policy::Resilient => "3 attempts \u{b7} bounded, stable-key retries",
        }
    }

    fn attempts(self) -> usize {
        if self == Policy::Optimistic { 1 } else { 3 }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Inventory,
    Ship,
}

/// Python truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Int(i) => i.as_i64() != Some(0),
        Value::Float(f) => *f != 0.0,
        Value::Str(t) => !t.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Python's `value[key]` on a decoded JSON value: `TypeError` unless an object,
/// `KeyError` when missing.
fn subscript(v: &Value, key: &str) -> Result<Value> {
    match v {
        Value::Object(o) => o
            .get(key)
            .cloned()
            .ok_or_else(|| Error::raised("KeyError", format!("'{key}'"))),
        _ => Err(Error::raised(
            "TypeError",
            "value is not subscriptable by a string",
        )),
    }
}

fn valid_inventory(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        matches!(o.get("available"), Some(Value::Bool(_)))
            && matches!(o.get("warehouse"), Some(Value::Str(_)))
    })
}

fn retryable(e: &Error, op: Op) -> bool {
    e.is_known()
        || (op == Op::Inventory
            && matches!(e, Error::Raised { type_name, .. } if type_name == "ValueError"))
}

impl Policy {
    fn attempt(
        self,
        tools: &dyn ShippingTools,
        op: Op,
        mut call: impl FnMut() -> Result<Value>,
    ) -> Result<Value> {
        let attempts = self.attempts();
        let mut index = 0;
        loop {
            let result = call().and_then(|v| {
                if self == Policy::Resilient && op == Op::Inventory && !valid_inventory(&v) {
                    Err(Error::raised(
                        "ValueError",
                        "inventory response failed validation",
                    ))
                } else {
                    Ok(v)
                }
            });
            let err = match result {
                Ok(v) => return Ok(v),
                Err(e @ Error::BudgetExceeded(_)) => return Err(e),
                Err(e) => e,
            };
            let can_retry = retryable(&err, op);
            if index == attempts - 1 || (self == Policy::Resilient && !can_retry) {
                return Err(err);
            }
            let wait = match (self, &err) {
                (Policy::Resilient, Error::RateLimited { retry_after }) => *retry_after,
                (Policy::Resilient, _) => 0.15 * f64::from(1u32 << index),
                _ => 0.0,
            };
            tools.sleep(wait)?;
            index += 1;
        }
    }

    /// Runs the shipping task and returns the outcome object the reference reports:
    /// `{"completed": true, "receipt": ...}` or `{"completed": false, "reason": ...}`.
    pub fn run(self, tools: &dyn ShippingTools) -> Value {
        match self.task(tools) {
            Ok(v) => v,
            Err(e) => obj! {"completed" => false, "reason" => e.type_name()},
        }
    }

    fn task(self, tools: &dyn ShippingTools) -> Result<Value> {
        let sku = Value::from("CLOUD-01");
        let stock = self.attempt(tools, Op::Inventory, || tools.check_inventory(&sku))?;
        if !truthy(&subscript(&stock, "available")?) {
            return Ok(obj! {"completed" => false, "reason" => "Out of stock"});
        }
        let warehouse = subscript(&stock, "warehouse")?;
        let key = (self == Policy::Resilient).then_some("order-1729");
        let receipt = self.attempt(tools, Op::Ship, || {
            tools.create_shipment("order-1729", &warehouse, key)
        })?;
        Ok(obj! {"completed" => true, "receipt" => receipt})
    }
}
