//! The JSON value model the reference keeps: integers of any size distinct from floats,
//! finite floats only (`-0.0` kept), strings with possible lone surrogates, and objects that
//! remember insertion order (sorted only when canonicalised).

use super::Text;

/// An integer of any size. Values that fit `i64` are `Small`; larger ones keep their exact
/// decimal digits (normalised: no leading zeros, `-` sign only for negatives).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Int {
    /// Fits in an `i64`.
    Small(i64),
    /// Outside the `i64` range; exact decimal text.
    Big(Box<str>),
}

impl Int {
    /// Parses a decimal integer literal (optional leading `-`, digits). Returns `None` for
    /// anything else.
    pub fn parse_decimal(text: &str) -> Option<Int> {
        let (neg, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if let Ok(v) = text.parse::<i64>() {
            return Some(Int::Small(v));
        }
        let trimmed = digits.trim_start_matches('0');
        if trimmed.is_empty() {
            return Some(Int::Small(0));
        }
        if let Ok(v) = format!("{}{}", if neg { "-" } else { "" }, trimmed).parse::<i64>() {
            return Some(Int::Small(v));
        }
        let s = if neg {
            format!("-{trimmed}")
        } else {
            trimmed.to_owned()
        };
        Some(Int::Big(s.into_boxed_str()))
    }

    /// The value as `i64`, if it fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Int::Small(v) => Some(*v),
            Int::Big(_) => None,
        }
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        match self {
            Int::Small(v) => *v < 0,
            Int::Big(s) => s.starts_with('-'),
        }
    }

    /// Python `float(int)`: correctly rounded; `None` when it overflows to infinity.
    pub fn to_f64(&self) -> Option<f64> {
        let f = match self {
            Int::Small(v) => *v as f64,
            Int::Big(s) => s.parse::<f64>().ok()?,
        };
        f.is_finite().then_some(f)
    }

    /// Exact decimal text.
    pub fn to_decimal(&self) -> String {
        match self {
            Int::Small(v) => v.to_string(),
            Int::Big(s) => s.to_string(),
        }
    }
}

/// An ordered JSON object (insertion order).
#[derive(Clone, Debug, Default)]
pub struct Object {
    members: Vec<(Text, Value)>,
    /// Members are in key order (after [`Value::sort_keys`]): look-ups can bisect.
    sorted: bool,
}

impl PartialEq for Object {
    fn eq(&self, other: &Object) -> bool {
        self.members == other.members
    }
}

impl Object {
    /// An empty object.
    pub fn new() -> Self {
        Object {
            members: Vec::new(),
            sorted: false,
        }
    }

    /// Appends a member (the caller guarantees the key is new).
    pub fn push(&mut self, key: impl Into<Text>, value: impl Into<Value>) {
        self.sorted = false;
        self.members.push((key.into(), value.into()));
    }

    /// Sets a member, replacing an existing value of the same key in place.
    pub fn insert(&mut self, key: impl Into<Text>, value: impl Into<Value>) {
        let key = key.into();
        let value = value.into();
        match self.members.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => {
                self.sorted = false;
                self.members.push((key, value));
            }
        }
    }

    /// Looks a member up by key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        let key = key.as_bytes();
        // Small objects (every object of a trace): a scan that compares lengths first.
        if !self.sorted || self.members.len() <= 24 {
            return self
                .members
                .iter()
                .find(|(k, _)| k.as_wtf8() == key)
                .map(|(_, v)| v);
        }
        self.members
            .binary_search_by(|(k, _)| k.as_wtf8().cmp(key))
            .ok()
            .map(|i| &self.members[i].1)
    }

    /// The value of `key`, to change in place.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        let key = key.as_bytes();
        self.members
            .iter_mut()
            .find(|(k, _)| k.as_wtf8() == key)
            .map(|(_, v)| v)
    }

    /// Whether the key is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Members in insertion order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&Text, &Value)> {
        self.members.iter().map(|(k, v)| (k, v))
    }

    /// Keys in insertion order.
    pub fn keys(&self) -> impl Iterator<Item = &Text> {
        self.members.iter().map(|(k, _)| k)
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Whether the members are in key order already (what [`Object::sorted`] would give).
    pub fn in_key_order(&self) -> bool {
        self.sorted || self.members.windows(2).all(|w| w[0].0 <= w[1].0)
    }

    /// Members sorted by key code point (canonical order).
    pub fn sorted(&self) -> Vec<(&Text, &Value)> {
        let mut v: Vec<_> = self.iter().collect();
        v.sort_by(|a, b| a.0.cmp(b.0));
        v
    }

    /// A copy with members in canonical (sorted) order, recursively.
    pub fn into_members(self) -> Vec<(Text, Value)> {
        self.members
    }

    /// The `i`-th member in stored order.
    #[inline]
    pub fn member_at(&self, i: usize) -> Option<(&Text, &Value)> {
        self.members.get(i).map(|(k, v)| (k, v))
    }

    /// Removes a member, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let pos = self.members.iter().position(|(k, _)| k == key)?;
        Some(self.members.remove(pos).1)
    }

    pub(crate) fn from_members(members: Vec<(Text, Value)>) -> Self {
        Object {
            members,
            sorted: false,
        }
    }
}

impl FromIterator<(Text, Value)> for Object {
    fn from_iter<T: IntoIterator<Item = (Text, Value)>>(iter: T) -> Self {
        Object {
            members: iter.into_iter().collect(),
            sorted: false,
        }
    }
}

/// A JSON value.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Value {
    /// `null`
    #[default]
    Null,
    /// `true` / `false`
    Bool(bool),
    /// An integer of any size.
    Int(Int),
    /// A finite float (`-0.0` kept).
    Float(f64),
    /// A string.
    Str(Text),
    /// An array.
    Array(Vec<Value>),
    /// An object.
    Object(Object),
}

impl Value {
    /// Whether both are the same JSON text to be: equal, with members in the same order and
    /// floats to the bit (`0.0` and `-0.0` differ; `==` takes them as equal).
    pub fn identical(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
            (Value::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.identical(y))
            }
            (Value::Object(a), Value::Object(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b.iter())
                        .all(|((ka, va), (kb, vb))| ka == kb && va.identical(vb))
            }
            (a, b) => a == b,
        }
    }

    /// The object, if this is one.
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The object, to change in place.
    pub fn as_object_mut(&mut self) -> Option<&mut Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The array, to change in place.
    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The array, if this is one.
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The string, if this is a valid-UTF-8 string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(t) => t.as_str(),
            _ => None,
        }
    }

    /// The text, if this is a string.
    pub fn as_text(&self) -> Option<&Text> {
        match self {
            Value::Str(t) => Some(t),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The integer as `i64`, if this is an integer (never a bool) that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => i.as_i64(),
            _ => None,
        }
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The number as a float (Python `float(x)` for int or float; never for bools).
    pub fn as_number_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => i.to_f64(),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// Python `==` between JSON-native values: `1 == 1.0`, `True == 1` is **not** used here
    /// because bools never compare equal to numbers in the places the reference compares.
    pub fn py_eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Int(a), Value::Float(b)) | (Value::Float(b), Value::Int(a)) => {
                int_eq_float(a, *b)
            }
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Bool(a), Value::Int(b)) | (Value::Int(b), Value::Bool(a)) => {
                b.as_i64() == Some(i64::from(*a))
            }
            (Value::Bool(a), Value::Float(b)) | (Value::Float(b), Value::Bool(a)) => {
                *b == if *a { 1.0 } else { 0.0 }
            }
            (Value::Null, Value::Null) => true,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.py_eq(y))
            }
            (Value::Object(a), Value::Object(b)) => {
                a.len() == b.len()
                    && a.iter().all(|(k, v)| {
                        b.iter()
                            .find(|(k2, _)| *k2 == k)
                            .is_some_and(|(_, w)| v.py_eq(w))
                    })
            }
            _ => false,
        }
    }

    /// Sorts every object's members by key (canonical order), recursively. Fails with the
    /// key when an object holds it twice.
    pub fn sort_keys(&mut self) -> Result<(), String> {
        match self {
            Value::Array(items) => items.iter_mut().try_for_each(Value::sort_keys),
            Value::Object(obj) => {
                obj.members.sort_by(|a, b| a.0.cmp(&b.0));
                if let Some(w) = obj.members.windows(2).find(|w| w[0].0 == w[1].0) {
                    return Err(w[0].0.to_lossy());
                }
                obj.sorted = true;
                obj.members.iter_mut().try_for_each(|(_, v)| v.sort_keys())
            }
            _ => Ok(()),
        }
    }

    /// A short name of the JSON type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
}

fn int_eq_float(a: &Int, b: f64) -> bool {
    if b.fract() != 0.0 {
        return false;
    }
    match a {
        Int::Small(v) => {
            // Exact: compare through i128 when the float is integral and in range.
            if b.abs() < 9.3e18 {
                (b as i128) == i128::from(*v)
            } else {
                false
            }
        }
        Int::Big(s) => s.parse::<f64>().ok() == Some(b) && format!("{b:.0}") == **s,
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(Int::Small(v))
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(Int::Small(i64::from(v)))
    }
}
impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Int(Int::Small(i64::from(v)))
    }
}
impl From<usize> for Value {
    fn from(v: usize) -> Self {
        match i64::try_from(v) {
            Ok(v) => Value::Int(Int::Small(v)),
            Err(_) => Value::Int(Int::Big(v.to_string().into_boxed_str())),
        }
    }
}
impl From<u64> for Value {
    fn from(v: u64) -> Self {
        match i64::try_from(v) {
            Ok(v) => Value::Int(Int::Small(v)),
            Err(_) => Value::Int(Int::Big(v.to_string().into_boxed_str())),
        }
    }
}
impl From<Int> for Value {
    fn from(v: Int) -> Self {
        Value::Int(v)
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(Text::from(s))
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(Text::from(s))
    }
}
impl From<Text> for Value {
    fn from(t: Text) -> Self {
        Value::Str(t)
    }
}
impl From<&Text> for Value {
    fn from(t: &Text) -> Self {
        Value::Str(t.clone())
    }
}
impl From<Object> for Value {
    fn from(o: Object) -> Self {
        Value::Object(o)
    }
}
impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Self {
        Value::Array(v)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

/// Builds a value from `serde_json` (what users' tests usually write with `json!`).
/// Non-finite floats cannot occur in `serde_json::Value`; integers keep their exact value.
impl From<serde_json::Value> for Value {
    fn from(v: serde_json::Value) -> Self {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(b),
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::Int(Int::Small(i))
                } else if let Some(u) = n.as_u64() {
                    Value::from(u)
                } else {
                    Value::Float(n.as_f64().unwrap_or(0.0))
                }
            }
            serde_json::Value::String(s) => Value::from(s),
            serde_json::Value::Array(a) => Value::Array(a.into_iter().map(Value::from).collect()),
            serde_json::Value::Object(o) => Value::Object(
                o.into_iter()
                    .map(|(k, v)| (Text::from(k), Value::from(v)))
                    .collect(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_ints_normalise() {
        assert_eq!(Int::parse_decimal("-0"), Some(Int::Small(0)));
        assert_eq!(Int::parse_decimal("007"), Some(Int::Small(7)));
        assert_eq!(
            Int::parse_decimal("18446744073709551616"),
            Some(Int::Big("18446744073709551616".into()))
        );
        assert!(Int::parse_decimal("-18446744073709551616").is_some_and(|i| i.is_negative()));
        assert_eq!(Int::parse_decimal("1.0"), None);
    }

    #[test]
    fn python_equality_mixes_int_and_float() {
        assert!(Value::from(1).py_eq(&Value::Float(1.0)));
        assert!(!Value::from(1).py_eq(&Value::Float(1.5)));
        assert!(Value::Float(-0.0).py_eq(&Value::from(0)));
        assert!(!Value::from("1").py_eq(&Value::from(1)));
    }

    #[test]
    fn identical_values_write_the_same_text() {
        let parse = |t: &str| crate::json::parse(t).expect("json");
        let a = parse(r#"{"a": [1, 0.0, "x", {"b": null}], "c": true}"#);
        assert!(a.identical(&a.clone()));
        for other in [
            r#"{"a": [1, -0.0, "x", {"b": null}], "c": true}"#,
            r#"{"c": true, "a": [1, 0.0, "x", {"b": null}]}"#,
            r#"{"a": [1.0, 0.0, "x", {"b": null}], "c": true}"#,
            r#"{"a": [1, 0.0, "x", {"b": null}], "c": true, "d": 1}"#,
            r#"{"a": [1, 0.0, "x"], "c": true}"#,
        ] {
            let b = parse(other);
            assert!(!a.identical(&b), "{other}");
            assert_ne!(crate::json::compact(&a), crate::json::compact(&b));
        }
    }
}
