//! The two boxes of the latency experiment: a timed source and a recording sink.
//!
//! They are registered only in the bench's own [`Registry`], not among the built-ins.
//!
//! * `bench_src_timed(out data)` takes the time, **then** fills `size` fresh pseudo-random
//!   bytes and writes the message stamped with that time, so writing the payload is part of the
//!   measured latency (the LoLa review's point: a sample that is never written measures a
//!   different, cheaper thing).
//! * `bench_snk_latency(in data)` reads every payload byte, checks the sequence, **then** takes
//!   the time and records `now - sent`, and confirms the delivery.
//!
//! The source sends message `k + 1` only after the sink confirmed message `k`, so exactly one
//! message is in flight: the figure is the latency of the path, not the queueing delay of a
//! flood (as the router-chain write-up keeps a single send in flight). Confirmation goes
//! through a [`Probe`] shared by the two boxes of one run, found by the `run` config key; it
//! is outside the measured interval. Both ends use [`now_ns`], the runtime's one clock.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use smx_box::{BoxConfig, BoxError, BoxImpl, BoxSpec, ConfigKey, Flow, InPort, InitCtx, Io, OutPort, PortSpec, Stats};
use smx_box::{Message, now_ns};
use smx_runtime::Registry;

use super::baseline::{PayloadRng, touch};

/// How long the source waits for a confirmation before it gives up on the run.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(10);

/// The shared state of one latency run.
#[derive(Debug, Default)]
pub struct Probe {
    delivered: Mutex<u64>,
    confirmed: Condvar,
    samples: Mutex<Vec<u64>>,
    out_of_order: Mutex<u64>,
}

impl Probe {
    /// Takes the recorded latencies (ns) and the count of out-of-order messages.
    pub fn take(&self) -> (Vec<u64>, u64) {
        let samples = std::mem::take(&mut *lock(&self.samples));
        (samples, *lock(&self.out_of_order))
    }

    fn confirm(&self, delivered: u64) {
        *lock(&self.delivered) = delivered;
        self.confirmed.notify_one();
    }

    /// Waits until `count` messages were confirmed; `Err` after the timeout, `Ok(false)` when
    /// `stop` became true meanwhile.
    fn wait_for(&self, count: u64, stop: impl Fn() -> bool) -> Result<bool, BoxError> {
        let mut delivered = lock(&self.delivered);
        let mut waited = Duration::ZERO;
        let slice = Duration::from_millis(50);
        while *delivered < count {
            if stop() {
                return Ok(false);
            }
            if waited >= CONFIRM_TIMEOUT {
                return Err(BoxError(format!(
                    "bench_src_timed: message {} was not confirmed within {CONFIRM_TIMEOUT:?}",
                    count.saturating_sub(1)
                )));
            }
            delivered = self
                .confirmed
                .wait_timeout(delivered, slice)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            waited += slice;
        }
        Ok(true)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn probes() -> &'static Mutex<HashMap<u64, Arc<Probe>>> {
    static PROBES: OnceLock<Mutex<HashMap<u64, Arc<Probe>>>> = OnceLock::new();
    PROBES.get_or_init(Default::default)
}

/// A new probe registered under a fresh id (pass it as the boxes' `run` key).
pub fn new_probe() -> (u64, Arc<Probe>) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = Arc::new(Probe::default());
    lock(probes()).insert(id, probe.clone());
    (id, probe)
}

/// Forgets a probe once its run is over.
pub fn drop_probe(id: u64) {
    lock(probes()).remove(&id);
}

fn find_probe(config: &BoxConfig) -> Result<Arc<Probe>, BoxError> {
    let id = config.int("run")?;
    lock(probes())
        .get(&id)
        .cloned()
        .ok_or_else(|| BoxError(format!("{}: no latency run {id} is registered", config.instance)))
}

const RUN_KEY: ConfigKey = ConfigKey::int("run")
    .default_value("0")
    .help("id of the bench's latency run (set by smxrun bench)");

pub const SRC_SPEC: BoxSpec = BoxSpec::named("bench_src_timed")
    .summary("latency bench: sends `count` time-stamped messages of `size` fresh bytes, one in flight")
    .outputs(&[PortSpec::new("data").help("time-stamped messages")])
    .config(&[
        ConfigKey::int("count").default_value("1000").help("messages to send"),
        ConfigKey::int("size")
            .default_value("8")
            .help("payload bytes per message"),
        RUN_KEY,
    ])
    .create(create_src);

pub const SNK_SPEC: BoxSpec = BoxSpec::named("bench_snk_latency")
    .summary("latency bench: reads every byte, records now - sent per message, confirms delivery")
    .inputs(&[PortSpec::new("data").help("time-stamped messages")])
    .config(&[RUN_KEY])
    .create(create_snk);

/// The built-in boxes plus the two latency boxes.
pub fn registry() -> Registry {
    let mut registry = crate::builtin_registry();
    registry.register(SRC_SPEC);
    registry.register(SNK_SPEC);
    registry
}

/// The largest payload accepted, so that a typo cannot exhaust memory.
const MAX_SIZE: u64 = 64 * 1024 * 1024;

fn create_src(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    let size = config.int("size")?;
    if size > MAX_SIZE {
        return Err(BoxError(format!("{}: size {size} exceeds {MAX_SIZE}", config.instance)));
    }
    Ok(Box::new(TimedSrc {
        out: OutPort(0),
        count: config.int("count")?,
        sent: 0,
        rng: PayloadRng::new(0x5eed),
        buf: vec![0; size as usize],
        probe: find_probe(config)?,
    }))
}

struct TimedSrc {
    out: OutPort,
    count: u64,
    sent: u64,
    rng: PayloadRng,
    buf: Vec<u8>,
    probe: Arc<Probe>,
}

impl BoxImpl for TimedSrc {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        self.out = ctx.output("data")?;
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if self.sent >= self.count || !self.probe.wait_for(self.sent, || io.stop_requested())? {
            return Ok(Flow::End);
        }
        let sent_ns = now_ns();
        self.rng.fill(&mut self.buf);
        if io.write(self.out, Message::new(self.sent, sent_ns, &self.buf)).is_err() {
            return Ok(Flow::End);
        }
        self.sent += 1;
        Ok(if self.sent >= self.count {
            Flow::End
        } else {
            Flow::Continue
        })
    }

    fn stats(&self) -> Stats {
        Stats::new().with("sent", self.sent)
    }
}

fn create_snk(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Ok(Box::new(LatencySnk {
        input: InPort(0),
        received: 0,
        checksum: 0,
        probe: find_probe(config)?,
    }))
}

struct LatencySnk {
    input: InPort,
    received: u64,
    checksum: u64,
    probe: Arc<Probe>,
}

impl BoxImpl for LatencySnk {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        self.input = ctx.input("data")?;
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let Some(msg) = io.read(self.input) else {
            return Ok(Flow::Return);
        };
        self.checksum ^= touch(msg.payload());
        let latency = now_ns().saturating_sub(msg.sent_ns);
        if msg.seq != self.received {
            *lock(&self.probe.out_of_order) += 1;
        }
        lock(&self.probe.samples).push(latency);
        self.received += 1;
        self.probe.confirm(self.received);
        Ok(Flow::Return)
    }

    fn stats(&self) -> Stats {
        std::hint::black_box(self.checksum);
        Stats::new().with("received", self.received)
    }
}
