//! A campaign in the explorer: it opens on its list of runs (seed, faults, commits,
//! duplicates, oracle, the checks that failed, pass^k), `Enter` opens a run as an incident,
//! `c` compares the selected run with the one shown, `L` brings the list back. The file is
//! `cassettes/lost-ack-campaign.json`, made by `campaign` with the naive example agent.

mod keys;

use std::path::PathBuf;

use crossterm::event::KeyCode;
use ratatui::style::Color;
use toolstorm::document::Document;
use toolstorm::tui::app::{App, Mode, Screen};

use keys::{draw, key, press};

fn open() -> App {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("cassettes/lost-ack-campaign.json");
    let mut doc = Document::open(&path).expect("the campaign opens");
    doc.path = Some(PathBuf::from("cassettes/lost-ack-campaign.json"));
    App::new(doc)
}

#[test]
fn a_campaign_opens_on_its_runs_with_pass_k() {
    let mut app = open();
    assert_eq!(app.doc.runs.len(), 10);
    assert!(matches!(app.mode, Mode::Runs(_)), "{:?}", app.mode);
    let t = draw(&mut app, 120, 36);
    let screen = t.backend().to_string();
    assert!(screen.contains("4/10 passed"), "{screen}");
    assert!(screen.contains("pass^2 0.133"), "{screen}");
    insta::assert_snapshot!("campaign_runs_120x36", screen);
    // Failing runs carry the failure colour, passing ones do not.
    let buf = t.backend().buffer();
    let row_of = |needle: &str| {
        (0..buf.area.height)
            .find(|y| {
                let line: String = (0..buf.area.width)
                    .map(|x| buf[(x, *y)].symbol().to_owned())
                    .collect();
                line.contains(needle)
            })
            .expect(needle)
    };
    let fail = row_of("  52 finished");
    let pass = row_of("  44 finished");
    assert_eq!(buf[(10, fail)].fg, Color::Red);
    assert_ne!(buf[(10, pass)].fg, Color::Red);
}

#[test]
fn enter_opens_a_run_and_c_compares_two() {
    let mut app = open();
    draw(&mut app, 120, 36);
    press(&mut app, key(KeyCode::Char('j')));
    press(&mut app, key(KeyCode::Enter));
    assert_eq!(app.run, 1, "the second run is shown");
    assert!(matches!(app.mode, Mode::Browse));
    assert_eq!(app.tab().label, "campaign run 2");
    // Back to the list; pick the first run and compare it with the one shown.
    press(&mut app, key(KeyCode::Char('L')));
    assert!(matches!(app.mode, Mode::Runs(1)));
    press(&mut app, key(KeyCode::Char('k')));
    press(&mut app, key(KeyCode::Char('c')));
    assert_eq!(app.screen, Screen::Compare);
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(screen.contains("Compare"), "{screen}");
    // The failing run (left) retried: its second call is not in the passing run (right).
    assert!(screen.contains("create_shipment#2"), "{screen}");
    assert!(screen.contains("FAIL → PASS"), "{screen}");
}
