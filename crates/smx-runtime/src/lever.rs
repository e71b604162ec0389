//! The settings a note of the report points to. The runtime says which setting would change a
//! decision it took; whoever drives it names that setting in its own words (the command line
//! its flags, a host program the fields of [`crate::RunOptions`]), so that no command line is
//! spelled inside the runtime.

/// A setting of the run that would change a decision a note reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lever {
    /// A thread per box: no operator chaining.
    ChainOff,
    /// A thread per time-triggered box instead of a cyclic executive.
    TtThreads,
    /// A cyclic executive for the time-triggered boxes.
    TtCyclic,
    /// Real-time scheduling forced for the nets and firewalls that ask for it.
    RealtimeOn,
    /// An explicit list of cores for the threads.
    CoreList,
    /// The number of trace events kept per thread.
    TraceLimit,
    /// A timeline of the run's threads.
    Trace,
    /// The length of the channels whose length the net leaves open.
    ChannelLen,
    /// An empty loop at a period, to measure what the platform alone holds (followed by the
    /// period).
    ProbePeriod,
}

/// How a driver of the runtime names each lever in the notes.
#[derive(Clone, Copy)]
pub struct LeverWords(pub fn(Lever) -> &'static str);

impl LeverWords {
    pub fn name(&self, lever: Lever) -> &'static str {
        (self.0)(lever)
    }
}

impl Default for LeverWords {
    fn default() -> Self {
        LeverWords(option_words)
    }
}

impl std::fmt::Debug for LeverWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LeverWords")
    }
}

impl PartialEq for LeverWords {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::fn_addr_eq(self.0, other.0)
    }
}

impl Eq for LeverWords {}

/// The names of a host program that drives the runtime through [`crate::RunOptions`]: the
/// default of [`crate::RunOptions::lever_words`].
pub fn option_words(lever: Lever) -> &'static str {
    match lever {
        Lever::ChainOff => "chain = ChainMode::Off",
        Lever::TtThreads => "firewall.mode = TtMode::Threads",
        Lever::TtCyclic => "firewall.mode = TtMode::Cyclic",
        Lever::RealtimeOn => "realtime = Realtime::On",
        Lever::CoreList => "pin = PinMode::List",
        Lever::TraceLimit => "the Tracer's limit",
        Lever::Trace => "trace = Some(Tracer)",
        Lever::ChannelLen => "default_channel_len",
        Lever::ProbePeriod => "smx_timing::probe at period",
    }
}
