//! Follow mode (`A`): on a file still being written — a live MCP recording, an `ask` record
//! that grows — the cursor goes to the newest call each time calls arrive, as `tail -f` and
//! k9s's log view do. Turning it on moves to the newest call now; any move of the cursor
//! turns it off (the header says while it is on).

use super::app::App;

impl App {
    /// `A`: follow the newest call, or stop following.
    pub(super) fn toggle_follow(&mut self) {
        if self.follow {
            self.stop_following();
            return;
        }
        self.follow = true;
        self.cursor = self.visible().last().copied().or(self.cursor);
        self.scroll[0] = 0;
        self.follow_effects = true;
        let why = if self.doc.live || self.ask_growing {
            "new calls are selected as they arrive"
        } else {
            "new calls are selected if the file grows"
        };
        self.info(format!(
            "following the newest call: {why}; any move (or A) stops"
        ));
    }

    /// A move of the cursor ends following (said once).
    pub(super) fn stop_following(&mut self) {
        if self.follow {
            self.follow = false;
            self.info("stopped following the newest call (A follows again)".into());
        }
    }

    /// After a reload that added calls: on the newest call when following.
    pub(super) fn follow_tail(&mut self) {
        if self.follow {
            self.cursor = self.visible().last().copied().or(self.cursor);
            self.scroll[0] = 0;
            self.follow_effects = true;
        }
    }
}
