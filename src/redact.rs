//! Redaction: values of secret keys become `"[REDACTED]"`, literal secrets are replaced
//! everywhere (longest first), and captured payloads are size- and depth-checked
//! (spec §3, §6.7).

mod argv;
pub mod named;
mod raw;
mod shapes;

use crate::error::ConfigError;
use crate::hashing::Set;
use crate::json::{MAX_DEPTH, Object, Text, Value, canonical_fits};

/// The marker that replaces secrets.
pub const MARKER: &str = "[REDACTED]";
/// Largest canonical size of a captured value, in bytes.
pub const MAX_CAPTURE_BYTES: usize = 128_000;
/// Depth at which captured payloads start (three levels are reserved for the report envelope).
pub const PAYLOAD_DEPTH: usize = 3;

/// Keys whose values are always redacted (after lowercasing and `-` → `_`).
pub const BUILTIN_SECRET_KEYS: [&str; 15] = [
    "password",
    "passwd",
    "secret",
    "token",
    "access_token",
    "refresh_token",
    "api_key",
    "apikey",
    "authorization",
    "cookie",
    "set_cookie",
    "credentials",
    "private_key",
    "client_secret",
    "session_token",
];

/// Removes secrets from values before they are recorded.
#[derive(Clone, Debug)]
pub struct Redactor {
    /// Normalised secret keys, as bytes: a key is looked up without checking its UTF-8 again.
    keys: Set<Vec<u8>>,
    /// The shortest and longest normalised secret key, in bytes: a key outside them is no
    /// secret, known without hashing it (most keys a call carries).
    key_lengths: (usize, usize),
    custom_keys: Vec<String>,
    /// Longest first; equal lengths keep the given order.
    secrets: Vec<String>,
}

impl Default for Redactor {
    fn default() -> Self {
        let keys: Set<Vec<u8>> = BUILTIN_SECRET_KEYS
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        Redactor {
            key_lengths: lengths(&keys),
            keys,
            custom_keys: Vec::new(),
            secrets: Vec::new(),
        }
    }
}

/// Lowercases (full Unicode) and turns `-` into `_`, as key matching does.
pub fn normalise_key(key: &str) -> String {
    key.to_lowercase().replace('-', "_")
}

/// The shortest and longest of the keys, in bytes.
fn lengths(keys: &Set<Vec<u8>>) -> (usize, usize) {
    keys.iter().fold((usize::MAX, 0), |(lo, hi), k| {
        (lo.min(k.len()), hi.max(k.len()))
    })
}

/// Keys this long or shorter are normalised on the stack (no allocation per key).
const SHORT_KEY: usize = 48;
/// Objects this small find a repeated key by comparing members, without a hash set.
const SMALL_OBJECT: usize = 16;

impl Redactor {
    /// The built-in redactor ([`Redactor::default`]), made once: code that redacts on every
    /// call need not build its key set each time.
    pub fn builtin() -> &'static Redactor {
        static BUILTIN: std::sync::OnceLock<Redactor> = std::sync::OnceLock::new();
        BUILTIN.get_or_init(Redactor::default)
    }

    /// A redactor with extra secret keys and literal secrets. Empty entries are refused.
    pub fn new<K, S>(keys: K, secrets: S) -> Result<Redactor, ConfigError>
    where
        K: IntoIterator,
        K::Item: AsRef<str>,
        S: IntoIterator,
        S::Item: AsRef<str>,
    {
        let mut r = Redactor::default();
        for k in keys {
            let k = k.as_ref();
            if k.is_empty() {
                return Err(empty_entry());
            }
            r.custom_keys.push(k.to_owned());
            r.keys.insert(normalise_key(k).into_bytes());
        }
        r.key_lengths = lengths(&r.keys);
        for s in secrets {
            let s = s.as_ref();
            if s.is_empty() {
                return Err(empty_entry());
            }
            r.secrets.push(s.to_owned());
        }
        // Stable sort keeps the given order among equal lengths.
        r.secrets
            .sort_by_key(|s| std::cmp::Reverse(s.chars().count()));
        Ok(r)
    }

    /// Whether this redactor redacts exactly what [`Redactor::builtin`] does (no literal
    /// secrets, no secret key beyond the built-in ones).
    pub fn is_builtin(&self) -> bool {
        self.secrets.is_empty() && self.keys.len() == Redactor::builtin().keys.len()
    }

    /// The literal secrets, longest first.
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// The custom secret keys as given.
    pub fn custom_keys(&self) -> &[String] {
        &self.custom_keys
    }

    /// Whether a key (any case, `-` or `_`) names a secret.
    pub fn is_secret_key(&self, key: &Text) -> bool {
        // A short ASCII key (nearly every key) is lowercased on the stack.
        let k = key.as_wtf8();
        if k.len() <= SHORT_KEY && k.is_ascii() {
            // Lowercasing ASCII keeps the length.
            let (shortest, longest) = self.key_lengths;
            if k.len() < shortest || k.len() > longest {
                return false;
            }
            let mut buf = [0u8; SHORT_KEY];
            for (slot, b) in buf.iter_mut().zip(k) {
                *slot = match b.to_ascii_lowercase() {
                    b'-' => b'_',
                    other => other,
                };
            }
            return self.keys.contains(&buf[..k.len()]);
        }
        let normalised = key.map_utf8_runs(normalise_key);
        normalised
            .as_str()
            .is_some_and(|k| self.keys.contains(k.as_bytes()))
    }

    /// Replaces every literal secret in a string.
    pub fn replace_secrets(&self, text: &Text) -> Text {
        if self.secrets.is_empty() {
            return text.clone();
        }
        text.map_utf8_runs(|s| {
            let mut out = s.to_owned();
            for secret in &self.secrets {
                if out.contains(secret.as_str()) {
                    out = out.replace(secret.as_str(), MARKER);
                }
            }
            out
        })
    }

    /// Replaces literal secrets in a plain string.
    pub fn replace_in_str(&self, s: &str) -> String {
        self.replace_secrets(&Text::from(s)).to_lossy()
    }

    /// Redacts a value: checks it is JSON-native, redacts, then enforces the 128 KB limit.
    pub fn scrub(&self, value: &Value) -> Result<Value, ConfigError> {
        self.scrub_borrowed(value).map(std::borrow::Cow::into_owned)
    }

    /// [`Redactor::scrub`] that borrows `value` when nothing in it would be redacted (no
    /// copy is made), and gives the redacted copy otherwise.
    pub fn scrub_borrowed<'v>(
        &self,
        value: &'v Value,
    ) -> Result<std::borrow::Cow<'v, Value>, ConfigError> {
        check_json(value, 0)?;
        let out = if self.untouched(value) {
            std::borrow::Cow::Borrowed(value)
        } else {
            std::borrow::Cow::Owned(self.walk(value)?)
        };
        if !canonical_fits(&out, MAX_CAPTURE_BYTES) {
            return Err(ConfigError::new("Captured value exceeds 128 KB"));
        }
        Ok(out)
    }

    fn walk(&self, value: &Value) -> Result<Value, ConfigError> {
        Ok(match value {
            Value::Object(obj) => {
                let mut out = Object::new();
                let small = obj.len() <= SMALL_OBJECT;
                let mut seen: Set<Text> = Set::default();
                for (k, v) in obj.iter() {
                    let new_key = self.replace_secrets(k);
                    let repeated = if small {
                        out.iter().any(|(earlier, _)| *earlier == new_key)
                    } else {
                        !seen.insert(new_key.clone())
                    };
                    if repeated {
                        return Err(ConfigError::new(
                            "Redaction creates ambiguous dictionary keys",
                        ));
                    }
                    let new_value = if self.is_secret_key(k) {
                        Value::from(MARKER)
                    } else {
                        self.walk(v)?
                    };
                    out.push(new_key, new_value);
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| self.walk(v))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Str(t) => Value::Str(self.replace_secrets(t)),
            other => other.clone(),
        })
    }

    /// [`Redactor::scrub_borrowed`], then [`check_json`] of the result from `depth` (a value
    /// to be stored that deep). A value with nothing to redact is walked once for both: its
    /// nesting checked from `depth` covers the check from the root.
    pub fn scrub_within<'v>(
        &self,
        value: &'v Value,
        depth: usize,
    ) -> Result<std::borrow::Cow<'v, Value>, ConfigError> {
        if check_json(value, depth).is_ok() && self.untouched(value) {
            if !canonical_fits(value, MAX_CAPTURE_BYTES) {
                return Err(ConfigError::new("Captured value exceeds 128 KB"));
            }
            return Ok(std::borrow::Cow::Borrowed(value));
        }
        let out = self.scrub_borrowed(value)?;
        check_json(&out, depth)?;
        Ok(out)
    }

    /// A record or result for a file or the screen (an outcome, a receipt, an envelope, a
    /// tracker action): the same redaction as captured payloads, without their size and depth
    /// limits. A value whose keys would collide after redaction is withheld whole.
    pub fn redact(&self, value: &Value) -> Value {
        self.walk(value).unwrap_or_else(|_| Value::from(MARKER))
    }

    /// Payload capture: redaction, then the depth check starting at depth 3.
    pub fn capture(&self, value: &Value) -> Result<Value, ConfigError> {
        self.scrub_within(value, PAYLOAD_DEPTH)
            .map(std::borrow::Cow::into_owned)
    }

    /// [`Redactor::capture`] of a value the caller gives up: when nothing in it would be
    /// redacted, the value itself is kept, not copied.
    pub fn capture_owned(&self, value: Value) -> Result<Value, ConfigError> {
        let redacted = match self.scrub_within(&value, PAYLOAD_DEPTH)? {
            std::borrow::Cow::Borrowed(_) => None,
            std::borrow::Cow::Owned(v) => Some(v),
        };
        Ok(redacted.unwrap_or(value))
    }

    /// Whether [`Redactor::walk`] would give `value` back as it is: no secret key, no literal
    /// secret in a key or a string, and no key repeated (which the walk refuses).
    fn untouched(&self, value: &Value) -> bool {
        match value {
            Value::Object(obj) => {
                let small = obj.len() <= SMALL_OBJECT;
                let mut seen: Set<&Text> = Set::default();
                obj.iter().enumerate().all(|(i, (k, v))| {
                    let repeated = if small {
                        obj.iter().take(i).any(|(earlier, _)| earlier == k)
                    } else {
                        !seen.insert(k)
                    };
                    !repeated
                        && !self.holds_secret(k)
                        && !self.is_secret_key(k)
                        && self.untouched(v)
                })
            }
            Value::Array(items) => items.iter().all(|v| self.untouched(v)),
            Value::Str(t) => !self.holds_secret(t),
            _ => true,
        }
    }

    /// Whether a literal secret occurs in `text` (what [`Redactor::replace_secrets`] would
    /// change).
    fn holds_secret(&self, text: &Text) -> bool {
        if self.secrets.is_empty() {
            return false;
        }
        let mut found = false;
        let _ = text.map_utf8_runs(|s| {
            found = found
                || self
                    .secrets
                    .iter()
                    .any(|secret| s.contains(secret.as_str()));
            String::new()
        });
        found
    }
}

fn empty_entry() -> ConfigError {
    ConfigError::new("Redaction keys and secrets must be nonempty strings")
}

/// The reference's copier checks: finite floats only, no value deeper than 32.
pub fn check_json(value: &Value, depth: usize) -> Result<(), ConfigError> {
    if depth > MAX_DEPTH {
        return Err(ConfigError::new("JSON nesting exceeds 32"));
    }
    match value {
        Value::Float(f) if !f.is_finite() => Err(ConfigError::new(
            "ToolStorm accepts only finite JSON-compatible data",
        )),
        Value::Array(items) => items.iter().try_for_each(|v| check_json(v, depth + 1)),
        Value::Object(obj) => obj.iter().try_for_each(|(_, v)| check_json(v, depth + 1)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::canonical;
    use crate::obj;

    #[test]
    fn scrubbing_within_a_depth_is_scrubbing_then_checking_that_depth() {
        let nest = |n: usize, leaf: Value| (0..n).fold(leaf, |v, _| Value::Array(vec![v]));
        let r = Redactor::new(["deep"], ["hunter2"]).expect("valid");
        let values = [
            obj! {"a" => 1},
            nest(28, Value::from(1)),
            nest(29, Value::from(1)),
            nest(33, Value::from(1)),
            // Too deep as it is, shallow enough once its secret is redacted.
            obj! {"deep" => nest(31, Value::from(1))},
            obj! {"note" => "pw hunter2"},
            obj! {"x" => Value::Float(f64::NAN)},
            Value::from("y".repeat(MAX_CAPTURE_BYTES)),
        ];
        for v in &values {
            for depth in [0, 3, 4] {
                let apart = r
                    .scrub_borrowed(v)
                    .and_then(|out| check_json(&out, depth).map(|()| out.into_owned()));
                let within = r.scrub_within(v, depth).map(std::borrow::Cow::into_owned);
                match (&apart, &within) {
                    (Ok(a), Ok(w)) => assert_eq!(canonical(a), canonical(w), "{v:?} at {depth}"),
                    (Err(a), Err(w)) => assert_eq!(a.to_string(), w.to_string(), "{v:?}"),
                    _ => panic!("{v:?} at {depth}: {apart:?} against {within:?}"),
                }
            }
        }
        // Nothing to redact: the value itself, not a copy.
        let plain = obj! {"a" => "b"};
        assert!(matches!(
            r.scrub_within(&plain, 3),
            Ok(std::borrow::Cow::Borrowed(_))
        ));
    }

    #[test]
    fn a_redactor_knows_when_it_redacts_as_the_builtin_one_does() {
        let none: [&str; 0] = [];
        assert!(Redactor::default().is_builtin());
        assert!(Redactor::builtin().is_builtin());
        // A built-in key given again (in another spelling) adds nothing.
        assert!(
            Redactor::new(["API-Key"], none)
                .expect("valid")
                .is_builtin()
        );
        assert!(
            !Redactor::new(["order_id"], none)
                .expect("valid")
                .is_builtin()
        );
        assert!(
            !Redactor::new(none, ["hunter2"])
                .expect("valid")
                .is_builtin()
        );
    }

    #[test]
    fn keys_are_read_alike_short_or_long_ascii_or_not() {
        let r = Redactor::new(
            ["Ünïcode-Key", &"x-".repeat(40), "PIN"],
            Vec::<String>::new(),
        )
        .expect("valid");
        for (key, secret) in [
            // A custom key shorter than every built-in one widens the lengths looked up.
            ("pin", true),
            ("Pi", false),
            ("API-Key", true),
            ("api_key", true),
            ("Api_Keys", false),
            ("ÜNÏCODE-KEY", true),
            ("ünïcode_key", true),
            (&"X_".repeat(40), true),
            (&"X_".repeat(41), false),
            ("", false),
        ] {
            assert_eq!(
                r.is_secret_key(&Text::from(key)),
                secret,
                "{key:?} read as a secret key: {secret}"
            );
            // The long way (no stack buffer) agrees.
            assert_eq!(
                r.keys.contains(normalise_key(key).as_bytes()),
                secret,
                "{key:?}"
            );
        }
    }

    #[test]
    fn the_shortest_and_longest_built_in_keys_are_secret_and_their_neighbours_are_not() {
        let r = Redactor::builtin();
        for (key, secret) in [
            ("TOKEN", true),
            ("toke", false),
            ("Session-Token", true),
            ("session_tokens", false),
            ("client_secret", true),
        ] {
            assert_eq!(r.is_secret_key(&Text::from(key)), secret, "{key:?}");
        }
    }

    #[test]
    fn a_repeated_key_is_refused_in_small_and_large_objects() {
        for members in [2usize, SMALL_OBJECT + 4] {
            let mut o = Object::new();
            for i in 0..members {
                o.push(format!("k{i}"), i);
            }
            assert!(Redactor::builtin().scrub(&Value::Object(o.clone())).is_ok());
            o.push("k0", "again");
            assert!(
                Redactor::builtin().scrub(&Value::Object(o)).is_err(),
                "{members} members"
            );
        }
        // Redaction that makes two keys one is refused too.
        let r = Redactor::new(Vec::<String>::new(), ["secret"]).expect("valid");
        let v = obj! {"a-secret" => 1, "a-[REDACTED]" => 2};
        assert!(r.scrub(&v).is_err());
    }

    #[test]
    fn longest_secret_first_and_keys_normalised() {
        let r = Redactor::new(["Customer-Email"], ["ab", "abcd"]).expect("valid");
        assert_eq!(
            r.replace_in_str("abcd ab abc"),
            "[REDACTED] [REDACTED] [REDACTED]c"
        );
        let v = obj! {"CUSTOMER-EMAIL" => "x", "customer email" => "keep"};
        let out = r.scrub(&v).expect("scrub");
        assert_eq!(
            canonical(&out),
            r#"{"CUSTOMER-EMAIL":"[REDACTED]","customer email":"keep"}"#
        );
    }

    #[test]
    fn refuses_empty_entries() {
        assert!(Redactor::new([""], Vec::<String>::new()).is_err());
    }
}
