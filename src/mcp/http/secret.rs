//! The listening proxy's transport secrets: a key of 32 bytes from the operating system's
//! secure random source, taken once when the proxy starts to listen, and what is derived from
//! it — the session ids the proxy issues, the ids of resumable event streams, and the digest of
//! the credential a session or stream was opened with.
//!
//! Each id is the keyed SHA-256 of what it names (a pseudo-random function of the key), so no
//! one who lacks the key can guess another client's session or stream from its own, from the
//! recording's path, the clock or the process id. The engine's rule of no OS randomness is for
//! decisions, which must replay; these are transport secrets, which must not.

use sha2::{Digest, Sha256};

/// Hex digits of an id: 128 bits.
const ID_HEX: usize = 32;

/// The digest of a request's credentials (`Authorization` and `Cookie`), keyed: never the
/// credentials themselves, and worthless without the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Credential([u8; 16]);

/// The key. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct Secret([u8; 32]);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// A new key from the operating system's secure random source.
    pub fn new() -> Result<Secret, getrandom::Error> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key)?;
        Ok(Secret(key))
    }

    /// A key given whole (tests).
    #[cfg(test)]
    pub fn fixed(key: [u8; 32]) -> Secret {
        Secret(key)
    }

    /// The keyed digest of `parts`, each length-prefixed so no two lists of parts meet.
    fn digest(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.0);
        for p in parts {
            h.update((p.len() as u64).to_le_bytes());
            h.update(p);
        }
        h.finalize().into()
    }

    /// The id of the `n`th thing of a kind (`session`, `stream`): 32 hex digits.
    pub fn id(&self, kind: &str, n: u64) -> String {
        let d = self.digest(&[kind.as_bytes(), &n.to_le_bytes()]);
        let mut out = String::with_capacity(ID_HEX);
        for b in &d[..ID_HEX / 2] {
            out.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
            out.push(char::from_digit(u32::from(b & 15), 16).unwrap_or('0'));
        }
        out
    }

    /// The digest of a request's credentials: its `Authorization` and `Cookie` values (each
    /// header's values in the order sent). A request with none has a digest too, so a session
    /// opened without credentials is not taken over by a request with some.
    pub fn credential(&self, headers: &hyper::HeaderMap) -> Credential {
        let joined = |name: &str| -> Vec<u8> {
            let mut out = Vec::new();
            for v in headers.get_all(name) {
                out.extend_from_slice(v.as_bytes());
                out.push(0);
            }
            out
        };
        let d = self.digest(&[b"credential", &joined("authorization"), &joined("cookie")]);
        let mut c = [0u8; 16];
        c.copy_from_slice(&d[..16]);
        Credential(c)
    }
}

/// Whether two ids are the same, in time that does not depend on where they differ.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_depend_on_the_key_and_the_number_and_are_long() {
        let a = Secret::fixed([1; 32]);
        let b = Secret::fixed([2; 32]);
        assert_eq!(a.id("session", 1).len(), ID_HEX);
        assert_ne!(a.id("session", 1), a.id("session", 2));
        assert_ne!(a.id("session", 1), b.id("session", 1));
        assert_ne!(a.id("session", 1), a.id("stream", 1));
        assert_eq!(a.id("stream", 7), a.id("stream", 7));
        assert!(a.id("stream", 7).bytes().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn two_keys_from_the_system_differ() {
        let a = Secret::new().expect("random");
        let b = Secret::new().expect("random");
        assert_ne!(a.id("session", 1), b.id("session", 1));
        assert_eq!(format!("{a:?}"), "Secret(..)");
    }

    #[test]
    fn credentials_are_told_apart_and_none_is_one_of_them() {
        let s = Secret::fixed([3; 32]);
        let of = |pairs: &[(&str, &str)]| {
            let mut h = hyper::HeaderMap::new();
            for (n, v) in pairs {
                h.append(
                    hyper::header::HeaderName::from_bytes(n.as_bytes()).expect("name"),
                    hyper::header::HeaderValue::from_str(v).expect("value"),
                );
            }
            s.credential(&h)
        };
        let none = of(&[]);
        let alice = of(&[("Authorization", "Bearer alice")]);
        assert_ne!(none, alice);
        assert_ne!(alice, of(&[("Authorization", "Bearer bob")]));
        assert_ne!(alice, of(&[("Cookie", "Bearer alice")]));
        assert_eq!(alice, of(&[("authorization", "Bearer alice")]));
        // Other headers do not count.
        assert_eq!(
            alice,
            of(&[("Authorization", "Bearer alice"), ("X-Trace", "1")])
        );
    }

    #[test]
    fn same_compares_whole_ids() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
    }
}
