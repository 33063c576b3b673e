//! JSON as ToolStorm 0.2.0 sees it: the value model, strict parsing with the reference's
//! limits, canonical encoding (the bytes every digest and cassette depends on), Python float
//! formatting, and the `json.dumps` layouts the command line prints.

mod encode;
pub mod float;
mod parse;
mod scan;
mod text;
pub(crate) mod tolerant;
mod value;

pub use encode::{
    canonical, canonical_fits, canonical_len, canonical_len_bound, compact, fingerprint, hex,
    one_line, pretty, quote, sha256_hex, write_canonical, write_compact, write_int, write_str,
    write_text,
};
pub use float::write_py_repr;
pub use parse::{
    MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_INT_DIGITS, ParseError, ParseErrorKind, Reader, parse,
    parse_at_depth, parse_within,
};
pub(crate) use scan::string_run_end;
pub use text::Text;
pub use value::{Int, Object, Value};

/// Builds a [`Value::Object`] from `key => value` pairs, keeping their order.
#[macro_export]
macro_rules! obj {
    () => { $crate::json::Value::Object($crate::json::Object::new()) };
    ($($k:expr => $v:expr),+ $(,)?) => {{
        let mut o = $crate::json::Object::new();
        $( o.push($k, $crate::json::Value::from($v)); )+
        $crate::json::Value::Object(o)
    }};
}
