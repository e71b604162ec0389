//! What a box implementation declares about itself: its name, its ports, its configuration keys
//! and how to make an instance.
//!
//! Everything but the factory is `'static` data built by `const fn`s, so a spec is a few lines
//! of constants next to the box. The ports are declared here once: the front end checks a
//! net's declarations against them, `smxrun boxes` lists them, and the handles a step uses are
//! their positions ([`InPort`](crate::InPort)`(i)` is the `i`-th entry of
//! [`BoxSpec::inputs`]), so a box never looks a port up by name.

use std::fmt;
use std::sync::Arc;

use crate::{BoxConfig, BoxError, BoxImpl};

/// Makes one instance of a box from its resolved configuration.
pub type Constructor = fn(&BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError>;

/// A constructor that may hold state of the host program (a closure, a factory object).
pub type SharedConstructor = Arc<dyn Fn(&BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> + Send + Sync>;

/// How instances are made: a plain function (usable in a `const`), or a shared closure.
#[derive(Clone)]
pub enum Factory {
    Fn(Constructor),
    Shared(SharedConstructor),
}

/// One port of a box. Its direction is the list it stands in ([`BoxSpec::inputs`] or
/// [`BoxSpec::outputs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortSpec {
    pub name: &'static str,
    /// The port may stay unconnected (`open` in the net, or not declared at all).
    pub optional: bool,
    pub help: &'static str,
}

impl PortSpec {
    pub const fn new(name: &'static str) -> Self {
        PortSpec {
            name,
            optional: false,
            help: "",
        }
    }

    pub const fn optional(self) -> Self {
        PortSpec { optional: true, ..self }
    }

    pub const fn help(self, help: &'static str) -> Self {
        PortSpec { help, ..self }
    }
}

/// Where a box's ports come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ports {
    /// Declared by the spec; a net must declare the same (it may leave optional ones out).
    Declared {
        inputs: &'static [PortSpec],
        outputs: &'static [PortSpec],
    },
    /// Whatever the net declares, in declaration order (boxes written for the original
    /// runtime, whose port indices come from the net).
    FromNet,
}

/// The type of a configuration value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A non-negative integer (`count = 1000`, `size = 8`).
    Int,
    Bool,
    Str,
    /// A time literal like the language's: `500ms`, `2s`, `10us`.
    Duration,
    /// One of [`ConfigKey::choices`].
    Choice,
    /// A decimal number (`gain = 0.5`).
    Float,
}

impl ValueKind {
    pub fn name(self) -> &'static str {
        match self {
            ValueKind::Int => "integer",
            ValueKind::Bool => "boolean",
            ValueKind::Str => "string",
            ValueKind::Duration => "duration",
            ValueKind::Choice => "choice",
            ValueKind::Float => "number",
        }
    }
}

/// A configuration key a box accepts, with its default (`None`: no default, optional).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigKey {
    pub name: &'static str,
    pub kind: ValueKind,
    /// Default, written as it would be in a config file (`"8"`, `"pubsub"`, `"2s"`).
    pub default: Option<&'static str>,
    pub choices: &'static [&'static str],
    pub help: &'static str,
    /// The value names a file the box writes ([`ConfigKey::file_written`]).
    pub file_written: bool,
}

impl ConfigKey {
    pub const fn new(name: &'static str, kind: ValueKind) -> Self {
        ConfigKey {
            name,
            kind,
            default: None,
            choices: &[],
            help: "",
            file_written: false,
        }
    }

    pub const fn int(name: &'static str) -> Self {
        ConfigKey::new(name, ValueKind::Int)
    }

    pub const fn float(name: &'static str) -> Self {
        ConfigKey::new(name, ValueKind::Float)
    }

    pub const fn bool(name: &'static str) -> Self {
        ConfigKey::new(name, ValueKind::Bool)
    }

    pub const fn str(name: &'static str) -> Self {
        ConfigKey::new(name, ValueKind::Str)
    }

    pub const fn duration(name: &'static str) -> Self {
        ConfigKey::new(name, ValueKind::Duration)
    }

    pub const fn choice(name: &'static str, choices: &'static [&'static str]) -> Self {
        ConfigKey {
            choices,
            ..ConfigKey::new(name, ValueKind::Choice)
        }
    }

    /// The default, written as in a config file; checked when the box is registered.
    pub const fn default_value(self, text: &'static str) -> Self {
        ConfigKey {
            default: Some(text),
            ..self
        }
    }

    pub const fn help(self, help: &'static str) -> Self {
        ConfigKey { help, ..self }
    }

    /// The value is the path of a file the box creates or replaces. A program that runs the
    /// box knows which files a run reads and writes besides (the net, its configuration, a
    /// report), and may refuse such a value before the start where writing it would replace
    /// one of them; the box need not know them.
    pub const fn file_written(self) -> Self {
        ConfigKey {
            file_written: true,
            ..self
        }
    }
}

/// Everything the runtime, the checker and `smxrun boxes` know about one implementation.
///
/// ```
/// use smx_box::prelude::*;
///
/// const SPEC: BoxSpec = BoxSpec::named("my_fwd")
///     .summary("forwards every message")
///     .inputs(&[PortSpec::new("in")])
///     .outputs(&[PortSpec::new("out")])
///     .create(|_config| Ok(Box::new(Fwd)));
///
/// struct Fwd;
/// impl BoxImpl for Fwd {
///     fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
///         if let Some(msg) = io.read(InPort(0)) {
///             let _ = io.write(OutPort(0), msg);
///         }
///         Ok(Flow::Return)
///     }
/// }
/// # assert_eq!(SPEC.inputs()[0].name, "in");
/// ```
#[derive(Clone)]
pub struct BoxSpec {
    /// Implementation name as written after `box` in a net (`smx_src_rand`).
    pub name: &'static str,
    pub summary: &'static str,
    pub ports: Ports,
    pub config: &'static [ConfigKey],
    /// Keys the spec does not declare are accepted too and kept as text (for boxes that read
    /// their configuration by name at run time, as boxes of the original runtime do).
    pub open_config: bool,
    /// Checks a configuration without making an instance ([`SpecBuilder::validate`]).
    pub validate: Option<Validator>,
    /// The box passes what it reads on outside the net ([`SpecBuilder::bridge`]).
    pub bridge: bool,
    /// The box takes messages straight from its feeder's writes ([`SpecBuilder::passes_on`]).
    pub passes_on: bool,
    /// The box emits messages that come from outside the net ([`SpecBuilder::brings_in`]).
    pub brings_in: bool,
    /// File descriptors one instance may hold open ([`SpecBuilder::file_descriptors`]).
    pub file_descriptors: u32,
    /// The box may run on the thread of the box that feeds it ([`SpecBuilder::chainable`]).
    pub chainable: bool,
    /// The step never waits, on an input or outside the net ([`SpecBuilder::never_waits`]).
    pub never_waits: bool,
    /// Each step writes everything already at hand before it may wait again
    /// ([`SpecBuilder::writes_in_batches`]).
    pub writes_in_batches: bool,
    pub factory: Factory,
}

/// Checks what can be checked of a configuration before the run (values, a port still free),
/// without keeping anything open.
pub type Validator = fn(&BoxConfig) -> Result<(), BoxError>;

/// A [`BoxSpec`] being declared: everything but the constructor.
#[derive(Debug, Clone, Copy)]
pub struct SpecBuilder {
    name: &'static str,
    summary: &'static str,
    ports: Ports,
    config: &'static [ConfigKey],
    open_config: bool,
    validate: Option<Validator>,
    bridge: bool,
    passes_on: bool,
    brings_in: bool,
    file_descriptors: u32,
    chainable: bool,
    never_waits: bool,
    writes_in_batches: bool,
}

impl BoxSpec {
    /// Starts a spec; finish it with [`SpecBuilder::create`] or [`SpecBuilder::factory`].
    pub const fn named(name: &'static str) -> SpecBuilder {
        SpecBuilder {
            name,
            summary: "",
            ports: Ports::Declared {
                inputs: &[],
                outputs: &[],
            },
            config: &[],
            open_config: false,
            validate: None,
            bridge: false,
            passes_on: false,
            brings_in: false,
            file_descriptors: 0,
            chainable: false,
            never_waits: false,
            writes_in_batches: false,
        }
    }

    /// Checks `config` the way the spec's validator does (`Ok` without one): a runtime calls it
    /// for every box before any thread starts, so that a bad value found only when the box
    /// would be created stops the run at once.
    pub fn check(&self, config: &BoxConfig) -> Result<(), BoxError> {
        self.validate.map_or(Ok(()), |v| v(config))
    }

    /// Makes one instance.
    pub fn create(&self, config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        match &self.factory {
            Factory::Fn(create) => create(config),
            Factory::Shared(create) => create(config),
        }
    }

    /// The declared inputs (empty for [`Ports::FromNet`]).
    pub fn inputs(&self) -> &'static [PortSpec] {
        match self.ports {
            Ports::Declared { inputs, .. } => inputs,
            Ports::FromNet => &[],
        }
    }

    /// The declared outputs (empty for [`Ports::FromNet`]).
    pub fn outputs(&self) -> &'static [PortSpec] {
        match self.ports {
            Ports::Declared { outputs, .. } => outputs,
            Ports::FromNet => &[],
        }
    }

    pub fn key(&self, name: &str) -> Option<&'static ConfigKey> {
        self.config.iter().find(|k| k.name == name)
    }
}

impl fmt::Debug for BoxSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoxSpec")
            .field("name", &self.name)
            .field("ports", &self.ports)
            .field("config", &self.config)
            .field("open_config", &self.open_config)
            .finish_non_exhaustive()
    }
}

impl SpecBuilder {
    pub const fn summary(self, summary: &'static str) -> Self {
        SpecBuilder { summary, ..self }
    }

    pub const fn inputs(self, inputs: &'static [PortSpec]) -> Self {
        let outputs = match self.ports {
            Ports::Declared { outputs, .. } => outputs,
            Ports::FromNet => &[],
        };
        SpecBuilder {
            ports: Ports::Declared { inputs, outputs },
            ..self
        }
    }

    pub const fn outputs(self, outputs: &'static [PortSpec]) -> Self {
        let inputs = match self.ports {
            Ports::Declared { inputs, .. } => inputs,
            Ports::FromNet => &[],
        };
        SpecBuilder {
            ports: Ports::Declared { inputs, outputs },
            ..self
        }
    }

    /// The ports are whatever the net declares, in declaration order.
    pub const fn ports_from_net(self) -> Self {
        SpecBuilder {
            ports: Ports::FromNet,
            ..self
        }
    }

    pub const fn config(self, config: &'static [ConfigKey]) -> Self {
        SpecBuilder { config, ..self }
    }

    /// Accept configuration keys the spec does not declare (kept as text).
    pub const fn open_config(self) -> Self {
        SpecBuilder {
            open_config: true,
            ..self
        }
    }

    /// A check of a configuration without making an instance (see [`BoxSpec::check`]).
    pub const fn validate(self, validate: Validator) -> Self {
        SpecBuilder {
            validate: Some(validate),
            ..self
        }
    }

    /// The box sends what it reads out of the net (a ZeroMQ sink): as a sink of its net it is
    /// not where messages end, so a run's total of delivered messages leaves it out when the
    /// net has another sink (a receiver in the same run would count each message again).
    pub const fn bridge(self) -> Self {
        SpecBuilder { bridge: true, ..self }
    }

    /// The box implements [`crate::BoxImpl::pass_on`] and [`crate::BoxImpl::pass_on_filled`]:
    /// on a chain's thread (see [`SpecBuilder::chainable`]) a runtime then offers it each
    /// message its feeder writes while the channel between them is empty, before the channel.
    /// For a box that sends what it reads out of the net one message at a time (a link's sink):
    /// the message then goes out from the feeder's write, without a trip through the channel
    /// and a step of its own, and a message the feeder builds in place is built where it goes
    /// out (a slot of a ring in shared memory).
    pub const fn passes_on(self) -> Self {
        SpecBuilder {
            passes_on: true,
            ..self
        }
    }

    /// The box emits messages that another process made (the source of a link between
    /// processes), each with its creation time there. A runtime then measures, at the read of
    /// each of its outputs, how long a message took from its creation to that read: the
    /// latency of the link itself, which the end-to-end figures at the sinks cannot give once
    /// a message passes other boxes, or meets others at a fan-in, on its way.
    pub const fn brings_in(self) -> Self {
        SpecBuilder {
            brings_in: true,
            ..self
        }
    }

    /// How many file descriptors one instance may hold open (sockets, files, a library's
    /// internal ones): a runtime adds them up and refuses, before the start, a net that the
    /// process's limit (`ulimit -n`) cannot hold, instead of a library aborting the process
    /// when it runs out.
    pub const fn file_descriptors(self, n: u32) -> Self {
        SpecBuilder {
            file_descriptors: n,
            ..self
        }
    }

    /// The step never waits for a message: it reads only with [`crate::Io::read`] and
    /// [`crate::Io::has_message`], never with [`crate::Io::read_blocking`] or
    /// [`crate::Io::wait_until`], and so needs no more than the firing rule found. A runtime may
    /// then run the box on the thread of the box that feeds it (operator chaining): when the
    /// feeder's write finds the channel between them full, the runtime steps this box in
    /// place to make room, where a thread of its own would have been woken. The firing rule,
    /// the books and the order stay the same; only the thread changes. A box that waited
    /// inside its step there would wait for ever, since the feeder is the thread it waits on.
    pub const fn chainable(self) -> Self {
        SpecBuilder {
            chainable: true,
            ..self
        }
    }

    /// The step never waits at all: not for a message ([`crate::Io::read_blocking`],
    /// [`crate::Io::wait_until`]) and not on anything outside the net (a clock, a socket, a
    /// device, a lock held elsewhere), so it lasts as long as its own computation and its
    /// writes. On a chain's thread the runtime then knows that the boxes behind it run again
    /// soon: it lets this box run ahead, as on a thread of its own, while the boxes behind it
    /// take what it wrote a channelful at a time (or at least every few milliseconds), and lets
    /// them keep what they collect across steps ([`crate::BoxImpl::idle`]) instead of asking
    /// them to release it before each step of this one.
    pub const fn never_waits(self) -> Self {
        SpecBuilder {
            never_waits: true,
            ..self
        }
    }

    /// A step may wait (for the first message from outside the net: a socket, a ring in
    /// shared memory), but then writes every message already at hand, up to a batch, before it
    /// may wait again. A runtime may then chain a box behind it over a long channel as behind a
    /// box that never waits: the boxes behind take what it wrote a channelful at a time, where
    /// behind a box that writes one message per wait they would take one at a time.
    pub const fn writes_in_batches(self) -> Self {
        SpecBuilder {
            writes_in_batches: true,
            ..self
        }
    }

    /// Finishes the spec with a plain constructor function (usable in a `const`).
    pub const fn create(self, create: Constructor) -> BoxSpec {
        self.finish(Factory::Fn(create))
    }

    /// Finishes the spec with a constructor that may capture state of the host program.
    pub fn factory(
        self,
        create: impl Fn(&BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> + Send + Sync + 'static,
    ) -> BoxSpec {
        self.finish(Factory::Shared(Arc::new(create)))
    }

    const fn finish(self, factory: Factory) -> BoxSpec {
        BoxSpec {
            name: self.name,
            summary: self.summary,
            ports: self.ports,
            config: self.config,
            open_config: self.open_config,
            validate: self.validate,
            bridge: self.bridge,
            passes_on: self.passes_on,
            brings_in: self.brings_in,
            file_descriptors: self.file_descriptors,
            chainable: self.chainable,
            never_waits: self.never_waits,
            writes_in_batches: self.writes_in_batches,
            factory,
        }
    }
}
