//! Benchmark: the tool loop's own overhead per round — everything but the model's time — and
//! the offline replay of a 100-round record.
//!
//! A model server on a local socket (a thread of this process, std only) answers every request
//! at once with four function calls of an instant tool; `ask::run` drives the real HTTP client
//! (`model::Model`, keep-alive), both wire formats, the live executor and the history for
//! `ROUNDS` rounds. The time per round is the loop's overhead plus the mock's (reading a
//! request whose history grows every round, and writing a fixed answer). Target (issue 51):
//! under 2 ms per round for a 4-call batch. Median of 5 runs.
//!
//! Then a 100-round run is recorded (`ask::record`) and replayed: reading the record and
//! serving its answers, every request compared with the recorded one, the tools running again.
//! Target: under 100 ms. Median of 5.
//!
//! Run with `cargo bench --bench ask_loop`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Instant;

use toolstorm::ask::record::{self, Header, Recorder};
use toolstorm::ask::{self, Config};
use toolstorm::executor::approval::DenyAll;
use toolstorm::executor::live::{LiveExecutor, LiveTools, Tools};
use toolstorm::executor::{Limits, Param, ParamType, ToolSpec};
use toolstorm::json::Value;
use toolstorm::model::{Api, Client, Model, Replayer, Respond, Settings};

const ROUNDS: usize = 50;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Four calls of `work`, in `api`'s shape; call ids unique per answer.
fn answer(api: Api, n: u64) -> String {
    let ids: Vec<String> = (0..4).map(|i| format!("c{n}_{i}")).collect();
    match api {
        Api::Responses => {
            let items: Vec<String> = ids
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    format!(
                        r#"{{"type":"function_call","call_id":"{id}","name":"work","arguments":"{{\"i\": {i}}}"}}"#
                    )
                })
                .collect();
            format!(
                r#"{{"output":[{}],"usage":{{"input_tokens":100,"output_tokens":20}}}}"#,
                items.join(",")
            )
        }
        Api::Chat => {
            let items: Vec<String> = ids
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    format!(
                        r#"{{"id":"{id}","type":"function","function":{{"name":"work","arguments":"{{\"i\": {i}}}"}}}}"#
                    )
                })
                .collect();
            format!(
                r#"{{"choices":[{{"message":{{"role":"assistant","content":null,"tool_calls":[{}]}}}}],"usage":{{"prompt_tokens":100,"completion_tokens":20}}}}"#,
                items.join(",")
            )
        }
    }
}

/// A model server answering every request with four calls; its base URL.
fn mock(api: Api) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = stream.set_nodelay(true);
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut writer = stream;
                let mut n = 0u64;
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let h = line.trim_end();
                        if h.is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    n += 1;
                    let out = answer(api, n);
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        out.len()
                    );
                    if writer.write_all(head.as_bytes()).is_err()
                        || writer.write_all(out.as_bytes()).is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    url
}

fn tools() -> Arc<dyn LiveTools> {
    Tools::new()
        .tool(
            ToolSpec::new("work", "Works").param(Param::new("i", ParamType::Integer, "n")),
            |args, _| Ok(args.get("i").cloned().unwrap_or(Value::Null)),
        )
        .shared()
}

fn config(rounds: usize) -> Config {
    Config {
        model: "m".into(),
        instructions: ask::DEFAULT_INSTRUCTIONS.into(),
        question: "Work four times, again and again.".into(),
        max_rounds: rounds,
        parallel: true,
    }
}

fn model(api: Api, url: &str) -> Model {
    let client = Client::new(None, Settings::default()).expect("client");
    Model::new(api, url, client).expect("model")
}

fn main() {
    let tools = tools();
    println!(
        "ask loop: wall time per round, {ROUNDS} rounds of a 4-call batch, instant tools, a local mock model (median of 5)"
    );
    for api in [Api::Responses, Api::Chat] {
        let url = mock(api);
        let mut per_round = Vec::new();
        for _ in 0..5 {
            let mut m = model(api, &url);
            let mut exec = LiveExecutor::new(Vec::new(), 7, Limits::default()).expect("exec");
            let t = Instant::now();
            let run = ask::run(
                &config(ROUNDS),
                &mut m,
                &mut exec,
                &tools,
                &mut DenyAll,
                &mut |_, _| {},
            )
            .expect("run");
            let ms = t.elapsed().as_secs_f64() * 1e3;
            assert!(run.stopped() && run.rounds.len() == ROUNDS);
            assert!(run.calls().iter().all(|c| c.kind == "ok"));
            per_round.push(ms / ROUNDS as f64);
        }
        println!(
            "  {:<9}  {:.3} ms per round (target < 2 ms)",
            api.as_str(),
            median(per_round)
        );
    }

    // A 100-round record, then its replay.
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("run.json");
    let url = mock(Api::Responses);
    let header = Header {
        api: Api::Responses,
        base_url: url.clone(),
        model: "m".into(),
        question: config(100).question,
        instructions: config(100).instructions,
        max_rounds: 100,
        parallel: true,
        world: "bench".into(),
        tools_from: None,
        prices: None,
        approver: None,
    };
    let mut recorder = Recorder::create(&path, header, &[], Value::Null).expect("record");
    let mut m = model(Api::Responses, &url);
    let mut exec = LiveExecutor::new(Vec::new(), 7, Limits::default()).expect("exec");
    let run = ask::run(
        &config(100),
        &mut m,
        &mut exec,
        &tools,
        &mut DenyAll,
        &mut |round, exec| {
            recorder
                .round(round, exec.report().to_value())
                .expect("round recorded")
        },
    )
    .expect("run");
    recorder
        .finish(&run, None, exec.report().to_value())
        .expect("finish");
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let mut times = Vec::new();
    let mut reads = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let _ = record::read(&path).expect("read");
        reads.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let r = record::read(&path).expect("read");
        let mut replay = Replayer::new(r.header.api, r.rounds);
        let mut exec = LiveExecutor::new(Vec::new(), 7, Limits::default()).expect("exec");
        let again = ask::run(
            &config(100),
            &mut replay,
            &mut exec,
            &tools,
            &mut DenyAll,
            &mut |_, _| {},
        )
        .expect("replay");
        assert_eq!(replay.finish(), Ok(100));
        assert!(replay.last_exchange().is_some());
        assert_eq!(
            again.calls(),
            run.calls()
                .iter()
                .map(|c| {
                    let mut c = c.clone();
                    c.ms = again
                        .calls()
                        .iter()
                        .find(|a| a.call_id == c.call_id && a.round == c.round)
                        .map_or(c.ms, |a| a.ms);
                    c
                })
                .collect::<Vec<_>>()
        );
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "replay of a 100-round record ({:.0} KB): {:.1} ms, of which reading it {:.1} ms (target < 100 ms; median of 5)",
        size as f64 / 1024.0,
        median(times),
        median(reads)
    );
}
