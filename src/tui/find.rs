//! Finding calls: the filter (hides what does not match; its language is
//! [`super::filter`]), the search (highlights what matches
//! — call ids, keys, tools, statuses, rules, argument and output text, and an MCP call's
//! answer that the server gave and the client never got — and `n`/`N` move
//! between matches) and the jump to a call id. Matching is case-insensitive.

use super::app::{App, Mode, Purpose};
use super::filter::Filter;
use crate::json::canonical;
use crate::report::Call;

/// The batch call id in an executor call's key (`b1.1.call_A#1` → `call_A`), the name its
/// lane carries.
pub fn lane_id(key: &str) -> Option<&str> {
    let rest = key.strip_prefix('b')?.split_once('.')?.1.split_once('.')?.1;
    Some(rest.rsplit_once('#')?.0)
}

/// Whether `call` matches the search `term` (lower-case) anywhere a person would look.
pub fn search_matches(call: &Call, term: &str) -> bool {
    if term.is_empty() {
        return false;
    }
    let id = term.trim_start_matches('#');
    if id.parse::<u64>().ok() == Some(call.id) {
        return true;
    }
    let has = |s: &str| s.to_lowercase().contains(term);
    has(&call.tool.to_lossy())
        || has(&call.key.to_lossy())
        || has(call.status.as_str())
        || call.fault.as_ref().is_some_and(|f| has(&f.to_lossy()))
        || call
            .error
            .as_ref()
            .is_some_and(|e| has(&e.type_name.to_lossy()))
        || has(&canonical(&call.arguments))
        || has(&canonical(&call.output))
}

impl App {
    /// Whether call `i` of the shown run matches the search `term` (lower-case): the call
    /// itself ([`search_matches`]) or, in an MCP recording, the answer the server gave that
    /// never reached the client (what the call really committed).
    pub fn call_matches(&self, i: usize, term: &str) -> bool {
        let Some(call) = self.timeline().report().calls.get(i) else {
            return false;
        };
        search_matches(call, term)
            || (!term.is_empty()
                && self
                    .session()
                    .and_then(|m| m.call(call.id))
                    .and_then(|r| r.dropped.as_ref())
                    .is_some_and(|d| canonical(d).to_lowercase().contains(term)))
    }

    /// Indices of the calls the timeline shows (after the filter; a filter that does not
    /// parse hides nothing, and [`App::apply_filter`] says why).
    pub fn visible(&self) -> Vec<usize> {
        let t = self.timeline();
        let filter = self
            .filter
            .as_deref()
            .and_then(|f| Filter::parse(f).ok())
            .filter(|f| !f.is_empty());
        let Some(f) = filter else {
            return (0..t.len()).collect();
        };
        // Worked out once per filter, run and verdict selection: a frame asks several times.
        let key = (
            self.run,
            self.tab().digest.clone(),
            t.len(),
            self.filter.clone().unwrap_or_default(),
            self.named.key.clone(),
        );
        if let Some((k, v)) = self.visible_cache.borrow().as_ref()
            && *k == key
        {
            return v.clone();
        }
        let v = f.select(t, &|i| self.named.names(i));
        *self.visible_cache.borrow_mut() = Some((key, v.clone()));
        v
    }

    /// Moves to the next (or previous) call matching the search, wrapping around.
    pub(super) fn search_step(&mut self, forward: bool) {
        self.search_from(forward, false);
    }

    /// [`App::search_step`]; `here_counts`: the selected call itself is a match to stop at.
    fn search_from(&mut self, forward: bool, here_counts: bool) {
        let Some(term) = self.search.clone().map(|t| t.to_lowercase()) else {
            self.info("no search: / starts one".into());
            return;
        };
        let visible = self.visible();
        let matches: Vec<usize> = visible
            .iter()
            .copied()
            .filter(|&i| self.call_matches(i, &term))
            .collect();
        if matches.is_empty() {
            self.error(format!(
                "no call matches {:?}",
                crate::printable::quoted(&term)
            ));
            return;
        }
        let here = self.cursor.unwrap_or(0);
        let target = if forward {
            matches
                .iter()
                .copied()
                .find(|&i| i > here || (here_counts && i == here))
                .unwrap_or(matches[0])
        } else {
            matches
                .iter()
                .rev()
                .copied()
                .find(|&i| i < here)
                .unwrap_or(matches[matches.len() - 1])
        };
        let n = matches.iter().position(|&i| i == target).unwrap_or(0) + 1;
        // Past the last match (or before the first) the search goes round: said, as a pager does.
        let wrapped = self.cursor.is_some()
            && if forward {
                target < here || (target == here && !here_counts)
            } else {
                target >= here
            };
        self.move_to(Some(target), "match");
        self.follow_match = true;
        self.info(format!(
            "match {n} of {}{} · n / N next / previous",
            matches.len(),
            if wrapped { " (wrapped)" } else { "" }
        ));
    }

    /// Enter in the filter, search or jump prompt.
    pub(super) fn submit_find(&mut self) {
        let Mode::Typing(purpose, field) = std::mem::replace(&mut self.mode, Mode::Browse) else {
            return;
        };
        let text = field.value().trim().to_owned();
        match purpose {
            Purpose::Filter => self.apply_filter((!text.is_empty()).then_some(text), true),
            Purpose::Search if text.is_empty() => self.search_step(true),
            Purpose::Search => {
                self.search = Some(text);
                // The selected call counts: a match on it is the first one.
                self.search_from(true, true);
            }
            Purpose::Jump => self.jump_to(&text),
            Purpose::WireSearch => {
                self.wire_search((!text.is_empty()).then_some(text), true, true);
            }
            Purpose::Field | Purpose::Write(_) => {}
        }
    }

    /// Moves to call `i` and says `said`; when the filter hides it, to the nearest call the
    /// filter shows (the next one, or the last), saying which and why.
    fn go_to_shown(&mut self, i: usize, said: String) {
        let visible = self.visible();
        if visible.contains(&i) {
            self.move_to(Some(i), "call");
            self.info(said);
            return;
        }
        let Some(to) = visible
            .iter()
            .copied()
            .find(|&v| v >= i)
            .or(visible.last().copied())
        else {
            self.error(format!(
                "call #{} is hidden by the filter, which shows no call · \\ edits it, Esc in \
                 the prompt clears it",
                i + 1
            ));
            return;
        };
        self.move_to(Some(to), "call");
        self.info(format!(
            "call #{} is hidden by the filter ({}): #{} is the nearest shown · \\ edits it, \
             Esc in the prompt clears it",
            i + 1,
            self.filter.as_deref().unwrap_or(""),
            to + 1
        ));
    }

    /// Moves to the call with the typed id (`#42` or `42`), or, in an executor run, to the next
    /// attempt of a batch call id (`call_C`). A filter stays as it is: when it hides the call,
    /// the nearest call it shows is chosen and the status line says so.
    fn jump_to(&mut self, text: &str) {
        let n = self.timeline().len();
        if !self.tab().batches.is_empty()
            && text.parse::<usize>().is_err()
            && !text.starts_with('#')
        {
            let calls = &self.timeline().report().calls;
            let of = |i: &usize| lane_id(&calls[*i].key.to_lossy()) == Some(text);
            let all: Vec<usize> = (0..n).filter(of).collect();
            let here = self.cursor;
            match all
                .iter()
                .copied()
                .find(|&i| here.is_none_or(|h| i > h))
                .or(all.first().copied())
            {
                Some(i) => {
                    let k = all.iter().position(|&a| a == i).unwrap_or(0) + 1;
                    let said = format!(
                        "{text}: attempt {k} of {} (call #{}) · : again for the next",
                        all.len(),
                        i + 1
                    );
                    self.go_to_shown(i, said);
                }
                None => self.error(format!(
                    "no call {:?}: type a call id (1 to {n}) or a batch call id such as call_A",
                    crate::printable::quoted(text)
                )),
            }
            return;
        }
        match text.trim_start_matches('#').parse::<usize>() {
            Ok(id) if (1..=n).contains(&id) => {
                self.go_to_shown(id - 1, format!("call #{id} of {n}"))
            }
            _ => self.error(format!(
                "no call {:?}: ids run from 1 to {n}",
                crate::printable::quoted(text)
            )),
        }
    }
}
