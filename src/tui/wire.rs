//! The wire view (`M`): every JSON-RPC message of an MCP recording's session in order, from
//! its wire log ([`crate::mcp::wirelog`]) — time, direction, size, method and id, and what
//! became of it (relayed, made by the proxy, held); the selected message below, pretty and
//! escaped. `/` searches the messages (`n`/`N` the next and previous match), `y` copies the
//! selected one, `J`/`K` scroll it.

use super::action::Command;
use super::app::{App, Mode};
use crate::hashing::Map;
use crate::mcp::wirelog::Dir;
use crate::mcp::wirelog::read::{Entry, Fate, Wire};

/// A direction as the list draws it: who sent it to whom.
pub fn arrow(dir: Dir) -> &'static str {
    match dir {
        Dir::FromClient => "C→P",
        Dir::ToServer => "P→S",
        Dir::FromServer => "P←S",
        Dir::ToClient => "C←P",
    }
}

/// What became of a message, in a word.
pub fn fate_word(f: Fate) -> &'static str {
    match f {
        Fate::Relayed => "relayed",
        Fate::Made => "made by proxy",
        Fate::Held => "not delivered",
        Fate::Unknown => "",
    }
}

/// The method each request id asked (by side: ids of the client's requests, of the
/// server's), to name the answers.
pub fn asked(wire: &Wire) -> Map<(bool, String), String> {
    let mut out = Map::default();
    for e in &wire.entries {
        if let (Some(m), Some(id)) = (&e.method, &e.id) {
            let from_client = matches!(e.dir, Dir::FromClient | Dir::ToServer);
            out.entry((from_client, id.clone()))
                .or_insert_with(|| m.clone());
        }
    }
    out
}

/// What a message is, in a few words: `tools/call create_shipment #3`, `← tools/call #3
/// error`, `notifications/initialized`.
pub fn label(e: &Entry, asked: &Map<(bool, String), String>) -> String {
    if let Some(x) = &e.exchange {
        // `POST /mcp → 200 text/event-stream` (the list's size column says HTTP)
        let kind = x
            .response
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| format!(" {}", v.split(';').next().unwrap_or(v).trim()))
            .unwrap_or_default();
        return format!("{} {} → {}{kind}", x.method, x.path, x.status);
    }
    let o = e.message.as_ref().and_then(|m| m.as_object());
    let id =
        e.id.as_deref()
            .map(|i| format!(" #{i}"))
            .unwrap_or_default();
    if let Some(m) = &e.method {
        let tool = o
            .and_then(|o| o.get("params"))
            .and_then(|p| p.as_object())
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
            .filter(|_| m == "tools/call")
            .map(|n| format!(" {n}"))
            .unwrap_or_default();
        return format!("{m}{tool}{id}");
    }
    if let Some(o) = o
        && let Some(i) = &e.id
    {
        // An answer goes the other way from its request.
        let to_client_request = matches!(e.dir, Dir::FromServer | Dir::ToClient);
        let of = asked
            .get(&(to_client_request, i.clone()))
            .map_or("answer", String::as_str);
        let how = if o.contains_key("error") {
            " error"
        } else if o
            .get("result")
            .and_then(|r| r.as_object())
            .and_then(|r| r.get("isError"))
            .and_then(|b| b.as_bool())
            == Some(true)
        {
            " isError"
        } else {
            ""
        };
        let http = e
            .http
            .map(|(status, _)| format!(" · HTTP {status}"))
            .unwrap_or_default();
        return format!("← {of}{id}{how}{http}");
    }
    match (&e.note, &e.raw) {
        (Some(n), _) if n.contains("stream of this request was cut") => {
            format!("stream cut{id}")
        }
        (Some(_), _) => "(not kept)".to_owned(),
        (None, Some(_)) => "(not JSON)".to_owned(),
        _ => "(message)".to_owned(),
    }
}

/// The selected message as text: its facts, then the message pretty-printed.
pub fn text(e: &Entry) -> String {
    let mut out = match &e.exchange {
        Some(_) => format!("{} · {:.3} ms · an HTTP exchange", e.dir.as_str(), e.ms),
        None => format!("{} · {:.3} ms · {} bytes", e.dir.as_str(), e.ms, e.bytes),
    };
    if let Some(s) = &e.sha {
        out.push_str(&format!(" · digest {s}"));
    }
    let fate = fate_word(e.fate);
    if !fate.is_empty() {
        out.push_str(&format!(" · {fate}"));
    }
    out.push('\n');
    if let Some((status, retry)) = e.http {
        out.push_str(&format!("HTTP {status}"));
        if let Some(r) = retry {
            out.push_str(&format!(" · Retry-After {r}"));
        }
        out.push('\n');
    }
    if let Some(n) = &e.note {
        out.push_str(n);
        out.push('\n');
    }
    if let Some(x) = &e.exchange {
        out.push_str(&format!("HTTP {} {} → {}\n", x.method, x.path, x.status));
        for (title, headers) in [
            ("request headers", &x.request),
            ("response headers", &x.response),
        ] {
            out.push_str(&format!("\n{title}:\n"));
            for (n, v) in headers {
                out.push_str(&format!("  {n}: {v}\n"));
            }
        }
    }
    if let Some(m) = &e.message {
        out.push_str(&crate::json::pretty(m));
    } else if let Some(r) = &e.raw {
        out.push_str(r);
    }
    out
}

/// Whether a message matches a search (its label, direction, what became of it — `not
/// delivered`, `made by proxy` — or its text, any case).
fn matches(e: &Entry, asked: &Map<(bool, String), String>, term: &str) -> bool {
    let term = term.to_lowercase();
    label(e, asked).to_lowercase().contains(&term)
        || e.dir.as_str().contains(&term)
        || fate_word(e.fate).contains(&term)
        || e.message
            .as_ref()
            .is_some_and(|m| crate::json::compact(m).to_lowercase().contains(&term))
        || e.raw
            .as_ref()
            .is_some_and(|r| r.to_lowercase().contains(&term))
        || e.exchange
            .as_ref()
            .is_some_and(|_| text(e).to_lowercase().contains(&term))
}

impl App {
    /// The shown run's wire log, when it has one.
    pub fn wire(&self) -> Option<&Wire> {
        self.tab().wire.as_deref()
    }

    /// `M`: opens or closes the wire view.
    pub(super) fn toggle_wire(&mut self) {
        if self.mode == Mode::Wire {
            self.mode = Mode::Browse;
            self.wire_cursor.open = false;
            return;
        }
        match self.wire() {
            Some(w) if !w.entries.is_empty() => {
                let n = w.entries.len();
                self.wire_cursor.row = self.wire_cursor.row.min(n - 1);
                self.wire_cursor.open = true;
                self.mode = Mode::Wire;
            }
            Some(w) => match &w.unreadable {
                Some(why) => self.error(format!("the wire log cannot be read: {why}")),
                None => self.info("the wire log holds no message".into()),
            },
            None => self.info(
                "no wire log: recordings made by `mcp --record` keep one beside the cassette \
                 (NAME.wire.jsonl)"
                    .into(),
            ),
        }
    }

    /// Moves the selection by `by` messages.
    pub(super) fn wire_move(&mut self, by: isize) {
        let n = self.wire().map_or(0, |w| w.entries.len());
        if n == 0 {
            return;
        }
        let row = self.wire_cursor.row as isize;
        self.wire_cursor.row = row.saturating_add(by).clamp(0, n as isize - 1) as usize;
        self.wire_cursor.scroll = 0;
    }

    /// Scrolls the selected message.
    pub(super) fn wire_scroll(&mut self, by: i32) {
        let s = i32::from(self.wire_cursor.scroll) + by;
        self.wire_cursor.scroll = u16::try_from(s.max(0)).unwrap_or(u16::MAX);
    }

    /// Searches for `term` (none: the last one again) from the selection on, forward or
    /// back, wrapping; `here` counts the selected message.
    pub(super) fn wire_search(&mut self, term: Option<String>, forward: bool, here: bool) {
        if let Some(t) = term {
            self.wire_cursor.search = Some(t);
        }
        self.mode = Mode::Wire;
        let Some(term) = self.wire_cursor.search.clone() else {
            self.info("no search yet: / searches the messages".into());
            return;
        };
        let Some(wire) = self.wire() else {
            return;
        };
        let asked = asked(wire);
        let n = wire.entries.len();
        let from = self.wire_cursor.row;
        let order: Vec<usize> = (0..n)
            .map(|k| {
                let step = if here { k } else { k + 1 };
                if forward {
                    (from + step) % n
                } else {
                    (from + n * 2 - step % n) % n
                }
            })
            .collect();
        let found = order
            .into_iter()
            .find(|&i| matches(&wire.entries[i], &asked, &term));
        let count = wire
            .entries
            .iter()
            .filter(|e| matches(e, &asked, &term))
            .count();
        match found {
            Some(i) => {
                self.wire_cursor.row = i;
                self.wire_cursor.scroll = 0;
                self.info(format!(
                    "{:?}: {} · n / N the next and previous",
                    crate::printable::quoted(&term),
                    crate::printable::count(count, "message", "messages")
                ));
            }
            None => self.error(format!(
                "no message matches {:?}",
                crate::printable::quoted(&term)
            )),
        }
    }

    /// `y` in the wire view: the selected message, as the view shows it.
    pub(super) fn copy_wire(&mut self) -> Vec<Command> {
        let row = self.wire_cursor.row;
        let Some(e) = self.wire().and_then(|w| w.entries.get(row)) else {
            self.info("no message selected".into());
            return Vec::new();
        };
        let title = format!("message {} of the wire log", row + 1);
        let text = match (&e.message, &e.raw) {
            (Some(m), _) => crate::json::pretty(m),
            (None, Some(r)) => r.clone(),
            (None, None) => text(e),
        };
        self.show_and_copy(title, text)
    }
}

impl App {
    /// The wire view's keys (none of them does anything else there); `None` when `action`
    /// is not the wire view's.
    pub(super) fn wire_action(&mut self, action: &super::action::Action) -> Option<Vec<Command>> {
        use super::action::Action;
        use super::app::Purpose;
        use super::prompt::TextField;
        if matches!(action, Action::ToggleWire) {
            self.toggle_wire();
            return Some(Vec::new());
        }
        if let Mode::Typing(Purpose::WireSearch, _) = self.mode
            && matches!(action, Action::Cancel)
        {
            self.mode = Mode::Wire;
            return Some(Vec::new());
        }
        if let Mode::Typing(Purpose::WireSearch, _) = self.mode
            && matches!(action, Action::Submit)
        {
            self.submit_find();
            return Some(Vec::new());
        }
        if self.mode != Mode::Wire {
            return None;
        }
        match action {
            Action::Pick(by) => self.wire_move(*by),
            Action::ScrollDown => self.wire_scroll(1),
            Action::ScrollUp => self.wire_scroll(-1),
            Action::StartSearch => {
                self.mode = Mode::Typing(Purpose::WireSearch, TextField::default());
            }
            Action::SearchNext => self.wire_search(None, true, false),
            Action::SearchPrev => self.wire_search(None, false, false),
            Action::CopyCall => return Some(self.copy_wire()),
            _ => return None,
        }
        Some(Vec::new())
    }
}
