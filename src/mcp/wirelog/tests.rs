//! The wire log alone: what a line keeps, its bounds, and reading back what a killed or
//! foreign writer left.

use std::sync::Arc;

use super::read::{Fate, parse, read};
use super::{Dir, MAX_MESSAGE, WireLog, wire_path};
use crate::clock::VirtualClock;

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("toolstorm-wirelog-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir.join("session.json")
}

fn log(cassette: &std::path::Path) -> WireLog {
    WireLog::create(cassette, false, Arc::new(VirtualClock::default()), [7; 32]).expect("log")
}

#[test]
fn each_message_keeps_its_facts_redacted_and_the_digests_tell_relayed_from_made() {
    let at = scratch("facts");
    let mut w = log(&at);
    let call = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"login","arguments":{"password":"hunter2-long-secret"}}}"#;
    w.message(Dir::FromClient, call);
    w.message(Dir::ToServer, call);
    let answer = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#;
    w.message(Dir::FromServer, &[answer.as_slice(), b"\n"].concat());
    w.message(
        Dir::ToClient,
        br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"timeout"}}"#,
    );
    w.message(Dir::FromServer, b"not json \x1b at all");
    assert_eq!(w.flush(), None);
    assert_eq!(w.finish(), None);
    let text = std::fs::read_to_string(wire_path(&at)).expect("read");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("[REDACTED]"));
    let wire = read(&wire_path(&at)).expect("a log");
    assert_eq!(wire.skipped, 0);
    let e = &wire.entries;
    assert_eq!(e.len(), 5);
    assert_eq!(e[0].method.as_deref(), Some("tools/call"));
    assert_eq!(e[0].id.as_deref(), Some("3"));
    assert_eq!(e[0].bytes, call.len() as u64);
    // Its line end is no part of the message: the answer's size and digest are without it.
    assert_eq!(e[2].bytes, answer.len() as u64);
    let fates: Vec<Fate> = e.iter().map(|e| e.fate).collect();
    assert_eq!(
        fates,
        [
            Fate::Relayed,
            Fate::Relayed,
            Fate::Held,
            Fate::Made,
            Fate::Held
        ]
    );
    assert_eq!(e[4].raw.as_deref(), Some("not json \u{1b} at all"));
}

#[test]
fn a_message_past_its_bound_keeps_its_size_and_a_note() {
    let at = scratch("big");
    let mut w = log(&at);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":"{}"}}"#,
        "x".repeat(MAX_MESSAGE)
    );
    w.message(Dir::FromServer, big.as_bytes());
    assert_eq!(w.finish(), None);
    let wire = read(&wire_path(&at)).expect("a log");
    let e = &wire.entries[0];
    assert_eq!(e.bytes, big.len() as u64);
    assert!(e.message.is_none());
    assert!(
        e.note.as_deref().is_some_and(|n| n.contains("not kept")),
        "{e:?}"
    );
}

#[test]
fn a_log_past_its_bound_stops_with_one_line_that_says_so() {
    let at = scratch("bound");
    let mut w = WireLog::bounded(&at, 4096).expect("log");
    let m = br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#;
    for _ in 0..200 {
        w.message(Dir::FromServer, m);
        w.flush();
    }
    assert_eq!(w.finish(), None);
    let size = std::fs::metadata(wire_path(&at)).expect("file").len();
    assert!(size <= 4096, "{size}");
    let wire = read(&wire_path(&at)).expect("a log");
    assert!(wire.entries.len() > 10 && wire.entries.len() < 200);
    assert!(wire.stopped.as_deref().is_some_and(|s| s.contains("bound")));
    let text = std::fs::read_to_string(wire_path(&at)).expect("read");
    assert!(
        text.trim_end().ends_with("later messages are not in it\"}"),
        "{text}"
    );
}

#[test]
fn a_torn_line_or_garbage_is_skipped_and_counted_never_fatal() {
    let bytes = b"{\"ms\":1.0,\"dir\":\"client>proxy\",\"bytes\":2,\"digest\":\"ab\",\"message\":{}}\n\
        \xff\xfe not utf-8\n[1,2]\n{\"ms\":\"x\"}\n{\"ms\":2.0,\"dir\":\"sideways\",\"bytes\":1}\n\
        {\"ms\":3.0,\"dir\":\"proxy>server\",\"bytes\":2,\"digest\":\"ab\",\"message\":{}}\n{\"ms\":4.0,\"dir\":\"pro";
    let wire = parse(bytes);
    assert_eq!(wire.entries.len(), 2);
    assert_eq!(wire.skipped, 5);
    assert_eq!(wire.entries[0].fate, Fate::Relayed);
}

#[test]
fn an_appended_session_continues_the_log_after_a_torn_line() {
    let at = scratch("append");
    std::fs::write(
        wire_path(&at),
        b"{\"ms\":1.0,\"dir\":\"client>proxy\",\"bytes\":2}\n{\"ms\":2.0,\"di",
    )
    .expect("write");
    let mut w =
        WireLog::create(&at, true, Arc::new(VirtualClock::default()), [1; 32]).expect("log");
    w.message(Dir::FromClient, b"{}");
    assert_eq!(w.finish(), None);
    let wire = read(&wire_path(&at)).expect("a log");
    assert_eq!(wire.entries.len(), 2, "{wire:?}");
    assert_eq!(wire.skipped, 1);
}

#[test]
fn a_writer_behind_the_relay_leaves_batches_out_and_says_how_many() {
    let at = scratch("behind");
    let mut w = log(&at);
    w.in_flight
        .store(super::MAX_IN_FLIGHT, std::sync::atomic::Ordering::Relaxed);
    w.message(Dir::FromClient, b"{}");
    w.message(Dir::ToServer, b"{}");
    w.hand_off(true);
    w.in_flight.store(0, std::sync::atomic::Ordering::Relaxed);
    w.message(Dir::FromServer, b"[]");
    w.hand_off(true);
    assert_eq!(w.finish(), None);
    let wire = read(&wire_path(&at)).expect("a log");
    assert_eq!(wire.gaps, 2, "{wire:?}");
    assert_eq!(wire.entries.len(), 1);
    assert_eq!(wire.skipped, 0);
}

#[test]
fn http_exchanges_join_the_log_once_attached_in_time_order() {
    use super::{Exchange, Exchanges};
    let at = scratch("exchanges");
    let clock = Arc::new(VirtualClock::default());
    let mut w = WireLog::create(&at, false, clock.clone(), [5; 32]).expect("log");
    let exchanges = Exchanges::default();
    let x = |status: u16| Exchange {
        dir: Dir::FromClient,
        method: "POST".into(),
        path: "/mcp".into(),
        status,
        request: vec![("authorization".into(), "[REDACTED]".into())],
        response: vec![
            ("content-type".into(), "text/event-stream".into()),
            ("mcp-session-id".into(), "s-\u{1b}1".into()),
        ],
    };
    // Before a log takes them, the HTTP side keeps nothing.
    assert!(!exchanges.active());
    exchanges.log(x(404));
    w.take_exchanges(exchanges.clone());
    assert!(exchanges.active());
    // A message first, an exchange a moment later, then one more message: the exchange
    // reaches the file after both (at the hand-off), and reads back between them.
    w.message(
        Dir::FromClient,
        br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    );
    crate::clock::Clock::sleep(&*clock, 0.001).expect("sleep");
    exchanges.log(x(200));
    crate::clock::Clock::sleep(&*clock, 0.001).expect("sleep");
    w.message(
        Dir::ToServer,
        br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    );
    assert!(w.due().is_some());
    assert_eq!(w.finish(), None);
    let text = std::fs::read_to_string(wire_path(&at)).expect("read");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[2].contains("\"exchange\""), "{text}");
    let wire = read(&wire_path(&at)).expect("a log");
    assert_eq!(wire.skipped, 0);
    let kinds: Vec<Option<u16>> = wire
        .entries
        .iter()
        .map(|e| e.exchange.as_ref().map(|x| x.status))
        .collect();
    assert_eq!(kinds, [None, Some(200), None], "{text}");
    let got = wire.entries[1].exchange.as_ref().expect("the exchange");
    assert_eq!(got, &x(200));
}

#[test]
fn exchanges_past_what_is_held_are_counted_left_out_not_kept() {
    use super::{EXCHANGES_HELD, Exchange, Exchanges};
    let at = scratch("exchanges-bound");
    let mut w = log(&at);
    let exchanges = Exchanges::default();
    w.take_exchanges(exchanges.clone());
    // Twice the bound before the relay's next hand-off (a flood of refused requests).
    for _ in 0..2 * EXCHANGES_HELD {
        exchanges.log(Exchange {
            dir: Dir::FromClient,
            method: "POST".into(),
            path: "/mcp".into(),
            status: 404,
            request: Vec::new(),
            response: Vec::new(),
        });
    }
    assert_eq!(w.finish(), None);
    let wire = read(&wire_path(&at)).expect("a log");
    let kept = wire.entries.iter().filter(|e| e.exchange.is_some()).count();
    assert_eq!(kept, EXCHANGES_HELD);
    assert_eq!(wire.gaps, EXCHANGES_HELD as u64, "the rest counted");
}
