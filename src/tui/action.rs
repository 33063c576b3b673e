//! Everything that can happen to the app: one [`Action`] enum in, [`Command`]s out (side
//! effects the runtime carries out and answers with new actions).

use std::path::PathBuf;

use super::focus::Focus;
use crate::document::{Document, Error};

/// A change the user or the runtime asks for.
#[derive(Clone, Debug)]
pub enum Action {
    /// Leave the app.
    Quit,
    /// Next / previous step (call).
    Next,
    /// Previous step.
    Prev,
    /// First step.
    First,
    /// Last step.
    Last,
    /// Follow the newest call as calls arrive (or stop following).
    ToggleFollow,
    /// Ten steps forward.
    PageDown,
    /// Ten steps back.
    PageUp,
    /// Next call with a fault.
    NextFault,
    /// Previous call with a fault.
    PrevFault,
    /// Next call that committed an effect.
    NextEffect,
    /// Previous call that committed an effect.
    PrevEffect,
    /// Next call behind the selected verdict (or any failed one).
    NextFailure,
    /// Select the next (`1`) or previous (`-1`) verdict.
    SelectVerdict(isize),
    /// Focus a pane by its number in Tab order (0: the timeline).
    FocusPane(usize),
    /// Next call that committed a duplicate effect.
    NextDuplicate,
    /// Previous call that committed a duplicate effect.
    PrevDuplicate,
    /// Open or close the summary of the whole run.
    ToggleSummary,
    /// Open or close the wire view (every message of an MCP session).
    ToggleWire,
    /// Show or hide the list of runs.
    ToggleRuns,
    /// Compare the selected run of the list with the one shown.
    CompareRun,
    /// In the summary: sort by the next (`1`) or previous (`-1`) column.
    SortBy(isize),
    /// In the summary: reverse the order.
    ReverseSort,
    /// Previous call behind the selected verdict (or any failed one).
    PrevFailure,
    /// Next run of a comparison.
    NextRun,
    /// Previous run.
    PrevRun,
    /// Move focus to the next pane.
    FocusNext,
    /// Move focus to the previous pane.
    FocusPrev,
    /// Scroll the focused pane down.
    ScrollDown,
    /// Scroll the focused pane up.
    ScrollUp,
    /// Start typing a timeline filter (hides calls that do not match).
    StartFilter,
    /// Start typing a search (calls stay; `n`/`N` move between matches).
    StartSearch,
    /// Start typing a call id to jump to.
    StartJump,
    /// Next search match.
    SearchNext,
    /// Previous search match.
    SearchPrev,
    /// An editing key in the text being typed (insert, move, delete, ...).
    Input(tui_input::InputRequest),
    /// Show the focused pane on the whole screen, or go back.
    ToggleZoom,
    /// The batch lanes' time axis: zoom in (`1`) or out (`-1`).
    LanesZoom(i8),
    /// Copy the selected call as JSON (to the terminal's clipboard, and shown).
    CopyCall,
    /// Copy the command line that reproduces the shown run.
    CopyCommand,
    /// Show or hide the scenario's story (title, description, lesson).
    ToggleStory,
    /// Show the last status message whole.
    ShowMessage,
    /// A second passed (status messages expire).
    Tick,
    /// Show or hide the key help.
    ToggleHelp,
    /// Close whatever is open (an overlay, a prompt, zoom); never quits.
    Back,
    /// A mouse click, resolved against the drawn screen at the edge (the runtime asks the
    /// view what is under the cell).
    Click {
        /// The pane clicked, if any.
        pane: Option<Focus>,
        /// The call on the timeline row clicked, if any.
        call: Option<usize>,
    },
    /// The mouse wheel, over a pane (or none).
    Wheel {
        /// Down (true) or up.
        down: bool,
        /// The pane under the pointer, if any.
        pane: Option<Focus>,
    },
    /// Stop the program and give the terminal back until it is continued (Ctrl-Z, SIGTSTP).
    Suspend,
    /// The terminal was resized.
    Resize(u16, u16),
    /// Reload the open file now.
    Reload,
    /// The open file changed on disk.
    FileChanged,
    /// A reload finished.
    Reloaded(Result<Box<Document>, Error>),
    /// `p`: what if, at the selected call — the fault picker.
    PinFault,
    /// The agent's re-run finished: the new run's recording (or why not), and what it pinned.
    AgentRan(Result<Box<Document>, crate::agent::RerunError>, String),
    /// A reload that asked a person for approvals finished: every answer so far, how many
    /// questions were asked now and how many were answered from earlier answers.
    ReloadedAsking {
        /// The document.
        result: Result<Box<Document>, Error>,
        /// Every answer (question, approved), kept for the next run.
        answers: Vec<(String, bool)>,
        /// Questions asked this time.
        asked: usize,
        /// Questions answered as before.
        reused: usize,
    },

    // The runner: editing, rerunning, comparing and writing.
    /// Open or close the rule editor.
    ToggleEditor,
    /// Editor: previous / next rule (`by` rows).
    EditRule(isize),
    /// Editor: previous / next field.
    EditField(isize),
    /// Editor: start typing the selected field.
    EditStart,
    /// Add a rule after the selected one.
    AddRule,
    /// Duplicate the selected rule.
    DuplicateRule,
    /// Delete the selected rule.
    DeleteRule,
    /// Move the selected rule up (`-1`) or down (`1`).
    MoveRule(isize),
    /// Undo the last edit.
    Undo,
    /// Redo an undone edit.
    Redo,
    /// Change the seed by this much.
    ShiftSeed(i64),
    /// Cycle the probability override.
    CycleProbability,
    /// Change the call budget by this much.
    ShiftBudget(i64),
    /// Cycle the policy (optimistic, retry, resilient, all).
    CyclePolicy,
    /// Run the current configuration again.
    Rerun,
    /// Show or hide the previous-vs-new comparison.
    ToggleCompare,
    /// Show or hide the runs side by side.
    TogglePolicies,
    /// Run the configuration twice and compare digests.
    CheckDeterminism,
    /// Save the scenario (to its file, or ask where).
    Save,
    /// Save the scenario under a new name.
    SaveAs,
    /// Write the shown run's cassette.
    WriteCassette,
    /// Write the contract verdicts.
    WriteVerdicts,
    /// Pick the previous / next item of a list (the fault kinds).
    Pick(isize),
    /// Accept the typed text (or the picked item).
    Submit,
    /// Drop the typed text.
    Cancel,
    /// An answer to a question (`y`, `n`, `d`, `m`).
    Answer(char),
    /// A rerun finished.
    Reran(Result<Box<Document>, Error>),
    /// The target exists and is not the open file: ask before overwriting.
    ConfirmOverwrite(WriteKind, PathBuf),
    /// A write finished.
    Written(WriteKind, PathBuf, Result<(), String>),
    /// The determinism check finished (its message; `Err` when digests differ or it failed).
    DeterminismChecked(Result<String, String>),
}

/// What the runner writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteKind {
    /// The scenario file.
    Scenario,
    /// The shown run's cassette.
    Cassette,
    /// The contract verdicts (`run --verdict` shape).
    Verdicts,
}

impl WriteKind {
    /// For messages.
    pub fn label(self) -> &'static str {
        match self {
            WriteKind::Scenario => "scenario",
            WriteKind::Cassette => "cassette",
            WriteKind::Verdicts => "verdicts",
        }
    }
}

/// A side effect for the runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Read the open file again and answer with [`Action::Reloaded`].
    Reload,
    /// Give the terminal back and stop the process until it is continued (Ctrl-Z).
    Suspend,
    /// Run the editor's scenario and answer with [`Action::Reran`].
    Rerun,
    /// Write a file atomically; unless `force`, ask first when it exists and is not the open
    /// file. Answers with [`Action::Written`] or [`Action::ConfirmOverwrite`].
    Write {
        /// What.
        kind: WriteKind,
        /// Where.
        path: PathBuf,
        /// Overwrite without asking.
        force: bool,
    },
    /// Run the configuration twice; answers with [`Action::DeterminismChecked`].
    CheckDeterminism,
    /// Put text on the terminal's clipboard (OSC 52).
    Copy(String),
    /// Run a campaign's seed again with other rules (in the background) and answer with
    /// [`Action::AgentRan`].
    RerunAgent(Box<AgentRerun>),
}

impl AgentRerun {
    /// The re-run of seed `seed` of the agent `source` knows, with the rules of `scenario`
    /// (its files and run named `tag`, `label` for people), starting `bin` as its proxy: not
    /// shown to anyone yet, so it starts nothing ([`AgentRerun::launch`] is `None`).
    pub fn new(
        source: AgentSource,
        seed: i64,
        scenario: PathBuf,
        label: String,
        tag: &'static str,
        bin: Option<PathBuf>,
    ) -> AgentRerun {
        AgentRerun {
            source,
            seed,
            scenario,
            label,
            tag,
            bin,
            stop: crate::agent::StopFlag::default(),
            launch: None,
            as_written: true,
        }
    }
}

/// Where the agent to start again is known from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentSource {
    /// A campaign file (its agent, folder and commands).
    Campaign(PathBuf),
    /// An MCP recording whose sidecar names its agent (`mcp --agent-cmd`).
    Recording(PathBuf),
}

/// A seed to run again with the rules of `scenario` (`p`, what if; `R` on an MCP recording).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentRerun {
    /// Where the agent is known from.
    pub source: AgentSource,
    /// The seed.
    pub seed: i64,
    /// The scenario with the pinned fault.
    pub scenario: PathBuf,
    /// What was pinned, for people.
    pub label: String,
    /// The new run's name and its files' (`what-if` for a pinned fault, `re-run` for the
    /// scenario as it is).
    pub tag: &'static str,
    /// The proxy program the agent starts (this one when none).
    pub bin: Option<PathBuf>,
    /// Set to stop the agent (Esc while it runs).
    pub stop: crate::agent::StopFlag,
    /// What it starts, as the explorer showed it (worked out when the command leaves
    /// `update`): the re-run starts only this, and nothing without it.
    pub launch: Option<crate::agent::Launch>,
    /// The scenario says all of its rules, its probability override included (edited rules,
    /// a pinned fault: [`crate::agent::Rules::Whole`]); `false`: a campaign's scenario as it is
    /// now, under the run's own plan (its `--probability`: [`crate::agent::Rules::Other`]).
    pub as_written: bool,
}
