//! A scripted model server for tests of `ask`: a small HTTP/1.1 server on a std `TcpListener`
//! that answers each request with the next scripted answer (past the script, HTTP 500) and
//! keeps every request it got; and the answers of both wire formats (calls, text).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use toolstorm::json::{Value, compact};

/// One scripted HTTP answer.
#[derive(Clone)]
pub struct Scripted {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// How long the model takes before it answers.
    pub delay: Duration,
}

/// A request the server got.
#[derive(Clone, Debug)]
pub struct Seen {
    pub at: Instant,
    pub path: String,
    pub authorization: Option<String>,
    pub body: String,
}

/// The scripted model server: answers in order; past the script, HTTP 500.
pub struct Server {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub fn start(script: Vec<Scripted>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(script.into_iter()));
        let theirs = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (seen, script) = (Arc::clone(&theirs), Arc::clone(&script));
                std::thread::spawn(move || serve(stream, &seen, &script));
            }
        });
        Server { url, seen }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen").clone()
    }
}

pub fn serve(
    stream: TcpStream,
    seen: &Mutex<Vec<Seen>>,
    script: &Mutex<std::vec::IntoIter<Scripted>>,
) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let (mut length, mut authorization) = (0usize, None);
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (name, value) = h.split_once(':').unwrap_or((h, ""));
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "authorization" => authorization = Some(value.trim().to_owned()),
                _ => {}
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        seen.lock().expect("seen").push(Seen {
            at: Instant::now(),
            path,
            authorization,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
        let answer = script.lock().expect("script").next().unwrap_or(Scripted {
            status: 500,
            headers: Vec::new(),
            body: r#"{"error":{"message":"the script has no more answers"}}"#.into(),
            delay: Duration::ZERO,
        });
        std::thread::sleep(answer.delay);
        if answer.status == 0 {
            // A model that never answers.
            std::thread::sleep(Duration::from_secs(30));
            return;
        }
        let mut head = format!(
            "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
            answer.status,
            answer.body.len()
        );
        for (k, v) in &answer.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        if writer.write_all(head.as_bytes()).is_err()
            || writer.write_all(answer.body.as_bytes()).is_err()
        {
            return;
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Api {
    Responses,
    Chat,
}

impl Api {
    pub fn name(self) -> &'static str {
        match self {
            Api::Responses => "responses",
            Api::Chat => "chat",
        }
    }
}

pub fn json_str(s: &str) -> String {
    compact(&Value::from(s))
}

/// An answer with these calls: (call_id, tool, arguments text).
pub fn calls(api: Api, list: &[(&str, &str, &str)]) -> Scripted {
    let body = match api {
        Api::Responses => {
            let items: Vec<String> = list
                .iter()
                .map(|(id, name, args)| {
                    format!(
                        r#"{{"type":"function_call","id":"fc_{id}","call_id":"{id}","name":"{name}","arguments":{},"status":"completed"}}"#,
                        json_str(args)
                    )
                })
                .collect();
            format!(
                r#"{{"id":"resp_1","object":"response","output":[{}],"usage":{{"input_tokens":100,"output_tokens":20,"total_tokens":120}}}}"#,
                items.join(",")
            )
        }
        Api::Chat => {
            let items: Vec<String> = list
                .iter()
                .map(|(id, name, args)| {
                    format!(
                        r#"{{"id":"{id}","type":"function","function":{{"name":"{name}","arguments":{}}}}}"#,
                        json_str(args)
                    )
                })
                .collect();
            format!(
                r#"{{"id":"chatcmpl-1","object":"chat.completion","choices":[{{"index":0,"message":{{"role":"assistant","content":null,"tool_calls":[{}]}},"finish_reason":"tool_calls"}}],"usage":{{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}}}"#,
                items.join(",")
            )
        }
    };
    ok(body)
}

/// A final text answer.
pub fn text(api: Api, t: &str) -> Scripted {
    let body = match api {
        Api::Responses => format!(
            r#"{{"id":"resp_2","object":"response","output":[{{"type":"message","id":"msg_1","role":"assistant","content":[{{"type":"output_text","text":{},"annotations":[]}}]}}],"usage":{{"input_tokens":300,"output_tokens":40}}}}"#,
            json_str(t)
        ),
        Api::Chat => format!(
            r#"{{"id":"chatcmpl-2","choices":[{{"index":0,"message":{{"role":"assistant","content":{}}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":300,"completion_tokens":40}}}}"#,
            json_str(t)
        ),
    };
    ok(body)
}

pub fn ok(body: String) -> Scripted {
    Scripted {
        status: 200,
        headers: Vec::new(),
        body,
        delay: Duration::ZERO,
    }
}

pub fn status(code: u16, headers: &[(&str, &str)], body: &str) -> Scripted {
    Scripted {
        status: code,
        headers: headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        body: body.to_owned(),
        delay: Duration::ZERO,
    }
}
