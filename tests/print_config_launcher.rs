//! `mcp --print-config NAME --launcher HOW`: the entry to paste into `mcpServers` starts the
//! proxy through the running binary's absolute path (the default), `uvx` or `pipx run`; the
//! arguments after the launcher's own are the same in every form.

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("runs")
}

/// Prints the entry `shipping` for a record-only session with the given extra flags and
/// returns its `command` and `args`.
fn entry(extra: &[&str]) -> (String, Vec<String>) {
    let mut args = vec!["mcp", "--print-config", "shipping"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--record", "incident.json", "--", "python3", "server.py"]);
    let out = run(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
    let server = &v["mcpServers"]["shipping"];
    let command = server["command"].as_str().expect("command").to_owned();
    let args = server["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg").to_owned())
        .collect();
    (command, args)
}

/// The proxy's own part of `args`: `mcp --record ABSOLUTE python3 server.py` (no `--`: the
/// MCP Inspector splices `args` into its own command line, where `--` ends its options).
fn assert_proxy_args(args: &[String]) {
    assert_eq!(args[0], "mcp", "{args:?}");
    assert_eq!(args[1], "--record", "{args:?}");
    assert!(
        Path::new(&args[2]).is_absolute() && args[2].ends_with("incident.json"),
        "{args:?}"
    );
    assert_eq!(&args[3..], ["python3", "server.py"]);
}

#[test]
fn the_separator_is_printed_only_where_the_words_need_it() {
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/mcp-lost-ack.json");
    let scenario = scenario.to_str().expect("utf-8 path");
    let print = |words: &[&str]| {
        let mut args = vec!["mcp", "--print-config", "s", "--record", "r.json"];
        args.extend_from_slice(words);
        let out = run(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let args: Vec<String> = v["mcpServers"]["s"]["args"]
            .as_array()
            .expect("args")
            .iter()
            .map(|a| a.as_str().expect("string").to_owned())
            .collect();
        args[3..].to_vec()
    };
    // A server's own flags after its program read as its own without `--`.
    assert_eq!(print(&["--", "npx", "-y", "pkg"]), ["npx", "-y", "pkg"]);
    assert_eq!(
        print(&[scenario, "--", "srv", "--record", "x"]),
        [scenario, "srv", "--record", "x"]
    );
    // A server whose first argument is one of our options needs the separator to stay its own.
    assert_eq!(
        print(&["--", "srv", "--seed", "3"]),
        ["--", "srv", "--seed", "3"]
    );
}

#[test]
fn the_default_launcher_is_this_binary_by_its_absolute_path() {
    let (command, args) = entry(&[]);
    assert!(Path::new(&command).is_absolute(), "{command}");
    assert_proxy_args(&args);
    assert_eq!(entry(&["--launcher", "path"]), (command, args));
}

#[test]
fn launcher_uvx_runs_the_package_through_uvx() {
    let (command, args) = entry(&["--launcher", "uvx"]);
    assert_eq!(command, "uvx");
    assert_eq!(args[0], "toolstorm-tui");
    assert_proxy_args(&args[1..]);
}

#[test]
fn launcher_pipx_runs_the_package_through_pipx_run() {
    let (command, args) = entry(&["--launcher=pipx"]);
    assert_eq!(command, "pipx");
    assert_eq!(&args[..2], ["run", "toolstorm-tui"]);
    assert_proxy_args(&args[2..]);
}

#[test]
fn a_scenario_stays_absolute_behind_a_launcher() {
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/mcp-lost-ack.json");
    let out = run(&[
        "mcp",
        "--print-config",
        "shipping",
        "--launcher",
        "uvx",
        scenario.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
    let server = &v["mcpServers"]["shipping"];
    assert_eq!(server["command"], "uvx");
    assert_eq!(
        server["args"],
        serde_json::json!(["toolstorm-tui", "mcp", scenario.to_str()])
    );
}

#[test]
fn an_unknown_launcher_is_a_usage_error_naming_the_choices() {
    let out = run(&[
        "mcp",
        "--print-config",
        "shipping",
        "--launcher",
        "npx",
        "--",
        "python3",
        "server.py",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid value 'npx' for '--launcher <HOW>'")
            && err.contains("[possible values: path, uvx, pipx]"),
        "{err}"
    );
}

#[test]
fn a_launcher_without_print_config_is_a_usage_error() {
    let out = run(&["mcp", "--launcher", "uvx", "--", "python3", "server.py"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--print-config <NAME>"), "{err}");
}
