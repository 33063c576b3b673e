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
    // A campaign run is an MCP recording like any other: its details say what the client got.
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(screen.contains("MCP request"), "{screen}");
    assert!(screen.contains("client"), "{screen}");
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
    // Under each call: its arguments, its commits and what its client received.
    assert!(
        screen.contains(r#"1 commit · got the result · {"order_id":"o-1"}"#),
        "{screen}"
    );
    // Two runs of a campaign are named by run and seed, not previous / new.
    assert!(
        screen.contains("Compare · FAIL → PASS · campaign run 1 (seed 43)")
            && screen.contains("→ campaign run 2 (seed 44)"),
        "{screen}"
    );
    // z does not hide it; Esc closes it.
    press(&mut app, key(KeyCode::Char('z')));
    assert_eq!(app.screen, Screen::Compare);
    assert!(!app.zoom);
    press(&mut app, key(KeyCode::Esc));
    assert_eq!(app.screen, Screen::Explore);
}

/// A fresh folder holding the bundled campaign's runs, and the campaign file's JSON to edit
/// and write there.
fn campaign_copy(tag: &str) -> (PathBuf, serde_json::Value) {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("cassettes");
    let dir = std::env::temp_dir().join(format!("toolstorm-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(here.join("lost-ack-campaign.runs"))
        .arg(&dir)
        .status()
        .expect("cp");
    assert!(copied.success());
    let text = std::fs::read_to_string(here.join("lost-ack-campaign.json")).expect("campaign");
    (dir, serde_json::from_str(&text).expect("json"))
}

#[test]
fn what_a_campaign_file_holds_is_shown_escaped_in_every_pane() {
    let (dir, mut v) = campaign_copy("escape");
    let title = "\u{1b}]0;PWNED-TITLE\u{7}\u{1b}[2J";
    v["verify"] = format!("test {title}").into();
    v["runs"][0]["oracle"] = false.into();
    v["runs"][0]["checks"][0]["name"] = format!("No duplicate side effects{title}").into();
    v["runs"][1]["recording"] = "nowhere/recording.json".into();
    v["runs"][1]["note"] = format!("gone{title}").into();
    let file = dir.join("c.campaign.json");
    std::fs::write(&file, serde_json::to_string_pretty(&v).expect("text")).expect("write");
    let mut app = App::new(Document::open(&file).expect("the campaign opens"));
    let escaped = r"\x1b]0;PWNED-TITLE\x07\x1b[2J";
    let screen = draw(&mut app, 160, 40).backend().to_string();
    // The runs list: a check's name, and the note of a run with no recording.
    assert!(
        screen.contains(&format!("No duplicate side effects{escaped}")),
        "{screen}"
    );
    assert!(screen.contains(&format!("gone{escaped}")), "{screen}");
    // The run itself: its verdicts, the oracle's command among them.
    press(&mut app, key(KeyCode::Enter));
    press(&mut app, key(KeyCode::Char('G')));
    let screen = draw(&mut app, 160, 70).backend().to_string();
    assert!(screen.contains("Oracle (--verify): test"), "{screen}");
    // The pane wraps the oracle's command after "test": its control characters are shown.
    assert!(screen.contains(escaped), "{screen}");
    assert!(!screen.contains("PWNED-TITLE\u{7}"), "{screen}");
}

#[test]
fn a_campaign_of_many_runs_reads_a_run_when_it_is_shown() {
    let (dir, mut v) = campaign_copy("lazy");
    // 2,000 runs: each of the ten recordings five times over... and one recording broken.
    let ten = v["runs"].as_array().expect("runs").clone();
    let mut runs = Vec::new();
    let mut seeds = Vec::new();
    for i in 0..2000usize {
        let mut r = ten[i % 10].clone();
        r["run"] = (i + 1).into();
        r["seed"] = (1000 + i).into();
        seeds.push(serde_json::Value::from(1000 + i));
        runs.push(r);
    }
    runs[1]["recording"] = "broken.json".into();
    std::fs::write(dir.join("broken.json"), "{not json").expect("write");
    v["runs"] = runs.into();
    v["seeds"] = seeds.into();
    let file = dir.join("many.campaign.json");
    std::fs::write(&file, serde_json::to_string(&v).expect("text")).expect("write");
    let doc = Document::open(&file).expect("the campaign opens");
    let c = doc.campaign.as_ref().expect("a campaign");
    assert_eq!(doc.runs.len(), 2000, "every run is listed");
    assert_eq!(
        c.unloaded.len(),
        1999,
        "only the first run's recording was read"
    );
    let mut app = App::new(doc);
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(screen.contains("2000 runs · 1/2000"), "{screen}");
    // pass^k stays in view below a list longer than the pane; G goes to the last run.
    assert!(screen.contains("pass^2"), "{screen}");
    press(&mut app, key(KeyCode::Char('G')));
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(screen.contains("2000/2000"), "{screen}");
    assert!(
        screen.contains("2000     2999 finished"),
        "the last run is in view: {screen}"
    );
    assert!(screen.contains("pass^2"), "{screen}");
    press(&mut app, key(KeyCode::Char('g')));
    // The broken recording is said when its run is opened; the run shown stays.
    let before = app.run;
    press(&mut app, key(KeyCode::Char('j')));
    press(&mut app, key(KeyCode::Enter));
    assert_eq!(app.run, before, "a run that cannot be read is not shown");
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(screen.contains("run 2 of 2000 cannot be shown"), "{screen}");
    assert!(
        matches!(app.mode, Mode::Runs(1)),
        "the list stays: {:?}",
        app.mode
    );
    // Another opens, read now: its calls are there.
    press(&mut app, key(KeyCode::Char('j')));
    press(&mut app, key(KeyCode::Enter));
    assert_eq!(app.run, 2);
    assert!(app.tab().timeline.report().calls.len() >= 2);
    let c = app.doc.campaign.as_ref().expect("a campaign");
    assert!(!c.unloaded.contains_key(&2) && c.unloaded.len() < 1999);
}

#[test]
fn a_merged_campaign_missing_a_shard_says_which_seeds_in_the_failure_colour() {
    // The bundled campaign with two of its runs dropped, as a merge with --allow-missing
    // writes it when a shard never arrived.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("cassettes/lost-ack-campaign.json");
    let mut file = toolstorm::campaign::CampaignFile::from_text(
        &std::fs::read_to_string(&path).expect("read"),
    )
    .expect("campaign");
    file.runs.retain(|r| r.run != 3 && r.run != 7);
    let dir = std::env::temp_dir().join(format!("toolstorm-tui-merged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    // Recordings named from the copy's folder.
    let base = path.parent().expect("folder");
    for r in &mut file.runs {
        r.recording = base.join(&r.recording).display().to_string();
    }
    file.scenario = base.join(&file.scenario).display().to_string();
    let merged = dir.join("merged.campaign.json");
    std::fs::write(&merged, file.to_text()).expect("write");
    let mut app = App::new(Document::open(&merged).expect("opens"));
    let t = draw(&mut app, 120, 36);
    let screen = t.backend().to_string();
    assert!(screen.contains("(10 planned)"), "{screen}");
    assert!(
        screen.contains("MISSING 2 planned seeds not run: 45, 49"),
        "{screen}"
    );
    let buf = t.backend().buffer();
    let y = (0..buf.area.height)
        .find(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, *y)].symbol().to_owned())
                .collect::<String>()
                .contains("MISSING")
        })
        .expect("the line");
    let x = (0..buf.area.width)
        .find(|x| buf[(*x, y)].symbol() == "M")
        .expect("M");
    assert_eq!(buf[(x, y)].fg, Color::Red);
}
