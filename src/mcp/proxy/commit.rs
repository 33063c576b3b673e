//! The committer: the thread that writes what the relay hands it, batch after batch in the
//! order they came — a batch's journal lines first, then its bytes for the server, then those
//! for the client — so nothing reaches a side before the journal has it, and the relay's own
//! thread makes no write (the writes are a third of a recorded call's cost; here they run
//! beside the relay, on the other core). What could not be written goes back to the relay as
//! a [`Trouble`].

use std::io::Write;
use std::process::ChildStdin;
use std::sync::mpsc::{Receiver, Sender, SyncSender};

use crate::mcp::journal::Sink;
use crate::mcp::recorder::Poker;

/// What one turn of the relay's loop leaves to write.
#[derive(Debug, Default)]
pub(super) struct Batch {
    /// Journal lines, each with its newline.
    pub(super) journal: Vec<u8>,
    /// Bytes for the server.
    pub(super) server: Vec<u8>,
    /// Calls whose requests are among `server`: if it cannot be written, they never ran.
    pub(super) unsent: Vec<u64>,
    /// Bytes for the client.
    pub(super) client: Vec<u8>,
    /// After this batch the server's input closes.
    pub(super) close_server: bool,
    /// Told when the batch is written (the relay waits for it before it decides anything
    /// that depends on what was written).
    pub(super) done: Option<SyncSender<()>>,
}

/// What could not be written.
#[derive(Debug)]
pub(super) enum Trouble {
    /// The journal's lines (why).
    Journal(String),
    /// The server's bytes: the server no longer reads its input; these calls never got to it.
    Server(Vec<u64>),
    /// The client's bytes: it stopped reading (why).
    Client(String),
}

/// The two ends and the journal, as the committer owns them.
pub(super) struct Outputs<'a> {
    pub(super) journal: Option<(Sink, Poker)>,
    pub(super) server_in: Option<ChildStdin>,
    pub(super) client_out: &'a mut (dyn Write + Send),
}

/// Writes batches until the relay hangs up.
pub(super) fn commit(batches: &Receiver<Batch>, mut out: Outputs<'_>, troubles: &Sender<Trouble>) {
    let mut client_gone = false;
    while let Ok(batch) = batches.recv() {
        if !batch.journal.is_empty()
            && let Some((sink, poker)) = out.journal.as_mut()
        {
            match sink.write(&batch.journal) {
                Ok(()) => poker.poke(),
                Err(e) => {
                    let _ = troubles.send(Trouble::Journal(e.to_string()));
                }
            }
        }
        if !batch.server.is_empty() {
            let written = out
                .server_in
                .as_mut()
                .is_some_and(|w| w.write_all(&batch.server).and_then(|()| w.flush()).is_ok());
            if !written {
                let _ = troubles.send(Trouble::Server(batch.unsent));
            }
        }
        if batch.close_server {
            out.server_in = None;
        }
        if !batch.client.is_empty() && !client_gone {
            let r = out
                .client_out
                .write_all(&batch.client)
                .and_then(|()| out.client_out.flush());
            if let Err(e) = r {
                client_gone = true;
                let _ = troubles.send(Trouble::Client(e.to_string()));
            }
        }
        if let Some(done) = batch.done {
            let _ = done.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{channel, sync_channel};

    /// A client end that takes `room` bytes and then fails, as a closed pipe does.
    struct Closing {
        got: Vec<u8>,
        room: usize,
    }

    impl Write for Closing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.got.len() + buf.len() > self.room {
                return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
            }
            self.got.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn batches_are_written_in_order_and_what_fails_is_told_once() {
        let (tx, rx) = sync_channel(4);
        let (ttx, trx) = channel();
        let mut client = Closing {
            got: Vec::new(),
            room: 6,
        };
        for (i, bytes) in [b"one\n".to_vec(), b"two\n".to_vec(), b"three\n".to_vec()]
            .into_iter()
            .enumerate()
        {
            tx.send(Batch {
                client: bytes,
                // No server: its bytes cannot be written, and their call never ran.
                server: b"req\n".to_vec(),
                unsent: vec![i as u64 + 1],
                ..Batch::default()
            })
            .expect("send");
        }
        let (dtx, drx) = sync_channel(1);
        tx.send(Batch {
            done: Some(dtx),
            ..Batch::default()
        })
        .expect("send");
        drop(tx);
        commit(
            &rx,
            Outputs {
                journal: None,
                server_in: None,
                client_out: &mut client,
            },
            &ttx,
        );
        assert!(drx.try_recv().is_ok(), "the last batch was acknowledged");
        assert_eq!(client.got, b"one\n".to_vec(), "what fit, in order");
        let told: Vec<Trouble> = trx.try_iter().collect();
        let servers: Vec<&Vec<u64>> = told
            .iter()
            .filter_map(|t| match t {
                Trouble::Server(calls) => Some(calls),
                _ => None,
            })
            .collect();
        assert_eq!(servers, vec![&vec![1], &vec![2], &vec![3]]);
        let clients = told
            .iter()
            .filter(|t| matches!(t, Trouble::Client(_)))
            .count();
        assert_eq!(clients, 1, "the client's leaving is told once: {told:?}");
    }
}
