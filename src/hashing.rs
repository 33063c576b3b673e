//! Hash maps and sets for keys the program makes or relays itself — tool names, call
//! numbers, JSON-RPC id texts — on paths that run for every call: foldhash's fixed-seed
//! hasher, several times cheaper than the standard SipHash for short keys, and the same on
//! every run (no OS randomness; no iteration order is relied on).

use foldhash::fast::FixedState;

/// A `HashMap` with the fast fixed-seed hasher (make one with `Map::default()`).
pub type Map<K, V> = std::collections::HashMap<K, V, FixedState>;

/// A `HashSet` with the fast fixed-seed hasher (make one with `Set::default()`).
pub type Set<T> = std::collections::HashSet<T, FixedState>;
