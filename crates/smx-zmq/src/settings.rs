//! The configuration keys of the ZeroMQ boxes and their validation.
//!
//! Everything that can be checked without a peer is checked here, at construction, so that a
//! bad endpoint or pattern fails the run before the start barrier with a message naming the
//! instance, the key and the accepted values.

use std::time::Duration;

use smx_box::{BoxConfig, BoxError, ConfigKey, ValueKind};

use super::curve::{self, Curve, KeyTexts};
use super::endpoint::{Endpoint, Transport};

/// The socket pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// XPUB (with `ZMQ_XPUB_NODROP`) to SUB: never blocks the sender; a full queue drops.
    PubSub,
    /// PUSH to PULL: a full queue blocks the sender (back-pressure), nothing is dropped.
    Pipeline,
}

impl Pattern {
    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::PubSub => "pubsub",
            Pattern::Pipeline => "pipeline",
        }
    }

    fn parse(text: &str) -> Result<Pattern, String> {
        match text {
            "pubsub" => Ok(Pattern::PubSub),
            "pipeline" => Ok(Pattern::Pipeline),
            other => Err(format!("unknown pattern '{other}': use pubsub or pipeline")),
        }
    }
}

const PATTERN: ConfigKey = ConfigKey {
    name: "pattern",
    kind: ValueKind::Choice,
    default: Some("pipeline"),
    choices: &["pubsub", "pipeline"],
    help: "pubsub: XPUB/SUB, the sender never blocks and counts HWM drops; pipeline: PUSH/PULL, lossless back-pressure",
    file_written: false,
};
const ENDPOINT: ConfigKey = ConfigKey {
    name: "endpoint",
    kind: ValueKind::Str,
    default: Some("tcp://127.0.0.1:50030"),
    choices: &[],
    help: "tcp://HOST:PORT, ipc:///PATH, ipc://NAME (per-user private directory) or inproc://NAME",
    file_written: false,
};
const HWM: ConfigKey = ConfigKey {
    name: "hwm",
    kind: ValueKind::Int,
    // libzmq's own default is 1000. 10000 (about 1.3 MB of queued small messages per peer: two
    // 64-byte frames each) lets a pipeline sink run ahead in longer bursts, so it blocks ten
    // times less often: on two cores, with channels of length 1, the report's net runs about
    // twice as fast.
    default: Some("10000"),
    choices: &[],
    help: "high-water mark: ZeroMQ messages queued per peer before pubsub drops or pipeline blocks (0 = unlimited); a batch of up to `batch` messages counts as one",
    file_written: false,
};
const TIMEOUT: ConfigKey = ConfigKey {
    name: "timeout",
    kind: ValueKind::Duration,
    default: Some("10s"),
    choices: &[],
    help: "source: idle time after which it ends; sink: longest wait for a peer (blocked send, sync, marker), once: then it gives up and waits no more",
    file_written: false,
};
const HEARTBEAT: ConfigKey = ConfigKey {
    name: "heartbeat",
    kind: ValueKind::Duration,
    default: Some("0"),
    choices: &[],
    help: "how often a peer is checked (ZeroMQ heartbeats): a peer silent for three of them is cut, and once every \
           peer is gone the link ends as lost instead of waiting for timeout (0: off). On the data connection a \
           receiver that takes nothing for three heartbeats also falls silent; `watch` avoids that",
    file_written: false,
};
const WATCH: ConfigKey = ConfigKey {
    name: "watch",
    kind: ValueKind::Str,
    default: Some(""),
    choices: &[],
    help: "with heartbeat: a second endpoint (bound and connected as `endpoint` is) that carries only the heartbeats, \
           so a peer held back by a full link is never taken for a lost one (empty: heartbeats on the data connection)",
    file_written: false,
};
const LINGER: ConfigKey = ConfigKey {
    name: "linger",
    kind: ValueKind::Duration,
    default: Some("10s"),
    choices: &[],
    help: "how long closing may wait to deliver queued messages",
    file_written: false,
};
/// The default of `max_message`: the largest frame a sink of this build sends for a payload of
/// [`MAX_PAYLOAD`] bytes, the most `smx_src_rand` makes. Checked against the constants in a
/// test.
const MAX_MESSAGE_DEFAULT: &str = "67108894";
const MAX_MESSAGE: ConfigKey = ConfigKey {
    name: "max_message",
    kind: ValueKind::Int,
    default: Some(MAX_MESSAGE_DEFAULT),
    choices: &[],
    help: "largest ZeroMQ frame in bytes (payload + 30-byte header; ZMQ_MAXMSGSIZE): a source cuts a peer that sends a larger one, a sink refuses a larger message; default 64 MiB + 30",
    file_written: false,
};

const CURVE_SECRET: ConfigKey = ConfigKey {
    name: "curve_secret",
    kind: ValueKind::Str,
    default: Some(""),
    choices: &[],
    help: "CURVE: this box's secret key, 40 characters of Z85 or the path of a key file (mode 0600; `smxrun keygen`); alone: this box is a CURVE server and accepts only peers that know its public key",
    file_written: false,
};
const CURVE_PUBLIC: ConfigKey = ConfigKey {
    name: "curve_public",
    kind: ValueKind::Str,
    default: Some(""),
    choices: &[],
    help: "CURVE: this box's public key (Z85 or a file); optional, derived from curve_secret, checked against it when given",
    file_written: false,
};
const CURVE_SERVER: ConfigKey = ConfigKey {
    name: "curve_server",
    kind: ValueKind::Str,
    default: Some(""),
    choices: &[],
    help: "CURVE: the server's public key (Z85 or a file): this box is a CURVE client and talks only to that server; its own key pair is curve_secret (a fresh one if empty)",
    file_written: false,
};
const CURVE_CLIENTS: ConfigKey = ConfigKey {
    name: "curve_clients",
    kind: ValueKind::Str,
    default: Some(""),
    choices: &[],
    help: "CURVE server: the only client public keys accepted, separated by commas, or a file with one per line (empty: any client that knows the server's public key)",
    file_written: false,
};

/// The largest payload `smx_src_rand` makes (its `size` maximum), from which the default
/// `max_message` is derived.
pub const MAX_PAYLOAD: u64 = 64 * 1024 * 1024;

/// The smallest `max_message`: room for a header and an end-of-stream marker of one short
/// topic.
pub const MIN_MAX_MESSAGE: u64 = 256;

/// Keys of `smx_snk_zmq`.
pub const SINK_KEYS: &[ConfigKey] = &[
    PATTERN,
    ENDPOINT,
    ConfigKey {
        name: "bind",
        kind: ValueKind::Bool,
        default: Some("true"),
        choices: &[],
        help: "bind the endpoint (default for the sink) or connect to it",
        file_written: false,
    },
    HWM,
    ConfigKey {
        name: "topic",
        kind: ValueKind::Str,
        default: Some(""),
        choices: &[],
        help: "topic of every message when the topic port is unconnected",
        file_written: false,
    },
    TIMEOUT,
    HEARTBEAT,
    WATCH,
    LINGER,
    ConfigKey {
        name: "sync",
        kind: ValueKind::Bool,
        default: Some("false"),
        choices: &[],
        help: "pubsub: wait until `subscribers` receivers have subscribed before sending (no slow-joiner loss)",
        file_written: false,
    },
    ConfigKey {
        name: "subscribers",
        kind: ValueKind::Int,
        default: Some("1"),
        choices: &[],
        help: "pubsub with sync: how many receivers to wait for",
        file_written: false,
    },
    ConfigKey {
        name: "batch",
        kind: ValueKind::Int,
        default: Some("64"),
        choices: &[],
        help: "most messages of one topic sent in one frame; 1 = one frame per message",
        file_written: false,
    },
    ConfigKey {
        name: "hold",
        kind: ValueKind::Duration,
        default: Some("50us"),
        choices: &[],
        help: "how long a frame may wait for more messages while they come in quick succession \
               (never while the sink would wait for input); 0 = send what each step read before it returns",
        file_written: false,
    },
    MAX_MESSAGE,
    ConfigKey {
        name: "receiver_books",
        kind: ValueKind::Bool,
        default: Some("false"),
        choices: &[],
        help: "pipeline: the one receiver's books count what was in flight when the run stopped (the link of a \
               deployment, whose two rows are merged), so a stop is no finding of this row",
        file_written: false,
    },
    CURVE_SECRET,
    CURVE_PUBLIC,
    CURVE_SERVER,
    CURVE_CLIENTS,
];

/// Keys of `smx_src_zmq`.
pub const SOURCE_KEYS: &[ConfigKey] = &[
    PATTERN,
    ENDPOINT,
    ConfigKey {
        name: "bind",
        kind: ValueKind::Bool,
        default: Some("false"),
        choices: &[],
        help: "bind the endpoint or connect to it (default for the source)",
        file_written: false,
    },
    HWM,
    ConfigKey {
        name: "subscribe",
        kind: ValueKind::Str,
        default: Some(""),
        choices: &[],
        help: "pubsub: topic prefix to receive (empty: all)",
        file_written: false,
    },
    TIMEOUT,
    HEARTBEAT,
    WATCH,
    LINGER,
    ConfigKey {
        name: "senders",
        kind: ValueKind::Int,
        default: Some("1"),
        choices: &[],
        help: "how many sinks feed this source: it ends after this many end-of-stream markers",
        file_written: false,
    },
    MAX_MESSAGE,
    ConfigKey {
        name: "clock",
        kind: ValueKind::Choice,
        default: Some("auto"),
        choices: &["auto", "comparable", "not_comparable"],
        help: "whether the senders' clocks agree with this host's: end-to-end latency behind the source counts \
               from the message's creation if so, else from its arrival here (auto: comparable for ipc, inproc and \
               loopback tcp, the same host)",
        file_written: false,
    },
    CURVE_SECRET,
    CURVE_PUBLIC,
    CURVE_SERVER,
    CURVE_CLIENTS,
];

/// Settings common to both roles.
#[derive(Debug, Clone)]
pub struct Common {
    pub instance: String,
    pub pattern: Pattern,
    pub endpoint: Endpoint,
    pub bind: bool,
    pub hwm: i32,
    pub timeout: Duration,
    /// Interval of ZeroMQ heartbeats; zero: none (see [`Common::peer_timeout`]).
    pub heartbeat: Duration,
    /// The endpoint of the connection that carries only the heartbeats, if any.
    pub watch: Option<Endpoint>,
    pub linger: Duration,
    /// Largest frame in bytes (`ZMQ_MAXMSGSIZE`), at least [`MIN_MAX_MESSAGE`].
    pub max_message: u64,
    /// CURVE authentication and encryption of the link (`None`: none, libzmq's NULL mechanism).
    pub curve: Option<Curve>,
}

/// Settings of a sink.
#[derive(Debug, Clone)]
pub struct SinkSettings {
    pub common: Common,
    pub topic: Vec<u8>,
    pub sync: bool,
    pub subscribers: u64,
    /// Most messages coalesced into one frame (at least 1; see [`super::batch`]).
    pub batch: usize,
    /// How long a partial frame may wait for more (see [`super::sink`]).
    pub hold: Duration,
    /// The one receiver's books settle what was in flight at a stop (`receiver_books`).
    pub receiver_books: bool,
}

/// Settings of a source.
#[derive(Debug, Clone)]
pub struct SourceSettings {
    pub common: Common,
    pub subscribe: Vec<u8>,
    pub senders: u64,
    /// The senders' creation times are on a clock comparable with this host's (`clock`).
    pub comparable_clock: bool,
}

fn common(config: &BoxConfig) -> Result<Common, BoxError> {
    let place = |key: &str, e: String| BoxError(format!("{} ({}): {key}: {e}", config.instance, config.implementation));
    let pattern = Pattern::parse(config.str("pattern")?).map_err(|e| place("pattern", e))?;
    let bind = config.bool("bind")?;
    let endpoint = Endpoint::parse(config.str("endpoint")?, bind).map_err(|e| place("endpoint", e))?;
    let hwm = config.int("hwm")?;
    let hwm = i32::try_from(hwm).map_err(|_| place("hwm", format!("{hwm} is larger than 2147483647")))?;
    let linger = config.duration("linger")?;
    i32::try_from(linger.as_millis()).map_err(|_| {
        place(
            "linger",
            format!("{linger:?} is longer than 24 days (2147483647 ms, libzmq's limit)"),
        )
    })?;
    let timeout = config.duration("timeout")?;
    if timeout.is_zero() {
        return Err(place("timeout", "must be longer than 0 (e.g. 500ms, 10s)".into()));
    }
    // The receiver's waits are computed in milliseconds of an i64, the sink's deadlines on an
    // Instant: keep both far from overflowing.
    if timeout > MAX_TIMEOUT {
        return Err(place("timeout", format!("{timeout:?} is longer than a year")));
    }
    let heartbeat = config.duration("heartbeat")?;
    if !heartbeat.is_zero() && !(Duration::from_millis(10)..=Duration::from_secs(600)).contains(&heartbeat) {
        return Err(place(
            "heartbeat",
            format!("{heartbeat:?} is outside 10ms..10min (0 turns heartbeats off)"),
        ));
    }
    let watch = match config.str("watch")? {
        "" => None,
        _ if heartbeat.is_zero() => {
            return Err(place(
                "watch",
                "carries heartbeats: set heartbeat too (e.g. 200ms)".into(),
            ));
        }
        text => Some(Endpoint::parse(text, bind).map_err(|e| place("watch", e))?),
    };
    let max_message = config.int("max_message")?;
    if !(MIN_MAX_MESSAGE..=i64::MAX as u64).contains(&max_message) {
        return Err(place(
            "max_message",
            format!(
                "{max_message} is not a frame size in {MIN_MAX_MESSAGE}..{} bytes",
                i64::MAX
            ),
        ));
    }
    let curve = curve::from_texts(&KeyTexts {
        secret: config.str("curve_secret")?,
        public: config.str("curve_public")?,
        server: config.str("curve_server")?,
        clients: config.str("curve_clients")?,
    })
    .map_err(|(key, e)| place(key, e))?;
    if curve.is_some() && matches!(endpoint.transport, Transport::Inproc { .. }) {
        return Err(place(
            "curve_secret",
            "CURVE secures tcp and ipc links; an inproc link never leaves the process (remove the curve keys)".into(),
        ));
    }
    Ok(Common {
        instance: config.instance.clone(),
        pattern,
        endpoint,
        bind,
        hwm,
        timeout,
        heartbeat,
        watch,
        linger,
        max_message,
        curve,
    })
}

impl Common {
    /// With heartbeats on, how long a peer may stay silent before libzmq cuts its connection:
    /// three heartbeats, so that one late answer on a busy network is not a loss.
    pub fn peer_timeout(&self) -> Option<Duration> {
        (!self.heartbeat.is_zero()).then(|| self.heartbeat * 3)
    }

    /// For a binding box: whether its endpoint can be bound now (see [`Endpoint::check_bind`]).
    pub fn check_bind(&self) -> Result<(), BoxError> {
        if self.bind {
            self.endpoint
                .check_bind()
                .map_err(|e| BoxError(format!("{}: endpoint: {e}", self.instance)))?;
            if let Some(watch) = &self.watch {
                watch
                    .check_bind()
                    .map_err(|e| BoxError(format!("{}: watch (its heartbeat connection): {e}", self.instance)))?;
            }
        }
        Ok(())
    }

    /// The settings of the connection that carries only the heartbeats, when there is one.
    pub fn watch_settings(&self) -> Option<Common> {
        let endpoint = self.watch.clone()?;
        Some(Common {
            instance: format!("{} (watch, its heartbeat connection)", self.instance),
            endpoint,
            watch: None,
            linger: Duration::ZERO,
            ..self.clone()
        })
    }
}

/// The longest `hold`.
const MAX_HOLD: Duration = Duration::from_millis(100);

/// The longest `timeout`.
const MAX_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

impl SinkSettings {
    pub fn from_config(config: &BoxConfig) -> Result<SinkSettings, BoxError> {
        let batch = config.int("batch")?;
        if batch == 0 {
            return Err(BoxError(format!(
                "{} ({}): batch: must be at least 1 (1 = one message per frame)",
                config.instance, config.implementation
            )));
        }
        let hold = config.duration("hold")?;
        if hold > MAX_HOLD {
            return Err(BoxError(format!(
                "{} ({}): hold: {hold:?} is longer than {MAX_HOLD:?}: a frame held that long delays its messages more than any batching saves",
                config.instance, config.implementation
            )));
        }
        Ok(SinkSettings {
            common: common(config)?,
            topic: config.str("topic")?.as_bytes().to_vec(),
            sync: config.bool("sync")?,
            subscribers: config.int("subscribers")?,
            batch: usize::try_from(batch).unwrap_or(usize::MAX),
            hold,
            receiver_books: config.bool("receiver_books")?,
        })
    }
}

impl SourceSettings {
    pub fn from_config(config: &BoxConfig) -> Result<SourceSettings, BoxError> {
        let senders = config.int("senders")?;
        if senders == 0 {
            return Err(BoxError(format!(
                "{} ({}): senders: must be at least 1",
                config.instance, config.implementation
            )));
        }
        let common = common(config)?;
        let comparable_clock = match config.str("clock")? {
            "comparable" => true,
            "not_comparable" => false,
            // `auto`; the key's choices refuse anything else before this.
            _ => common.endpoint.is_local(),
        };
        Ok(SourceSettings {
            common,
            subscribe: config.str("subscribe")?.as_bytes().to_vec(),
            senders,
            comparable_clock,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smx_box::ConfigValue;

    fn config(keys: &[ConfigKey], set: &[(&str, &str)]) -> BoxConfig {
        let mut config = BoxConfig {
            instance: "Snk1".into(),
            id: 0,
            implementation: "smx_snk_zmq".into(),
            values: Default::default(),
        };
        for key in keys {
            let text = set
                .iter()
                .find(|(k, _)| *k == key.name)
                .map(|(_, v)| *v)
                .or(key.default);
            if let Some(text) = text {
                let value = smx_box::parse_value(key, text).unwrap();
                config.values.insert(key.name.into(), value);
            }
        }
        config
    }

    #[test]
    fn defaults_validate() {
        let sink = SinkSettings::from_config(&config(SINK_KEYS, &[])).unwrap();
        assert!(sink.common.bind);
        assert_eq!(sink.common.pattern, Pattern::Pipeline);
        assert_eq!(sink.batch, 64);
        assert_eq!(sink.hold, Duration::from_micros(50));
        let single = SinkSettings::from_config(&config(SINK_KEYS, &[("batch", "1")])).unwrap();
        assert_eq!(single.batch, 1);
        let source = SourceSettings::from_config(&config(SOURCE_KEYS, &[])).unwrap();
        assert!(!source.common.bind);
        assert_eq!(source.senders, 1);
    }

    #[test]
    fn errors_name_instance_and_key() {
        let err = SinkSettings::from_config(&config(SINK_KEYS, &[("endpoint", "udp://x:1")])).unwrap_err();
        assert!(err.0.starts_with("Snk1 (smx_snk_zmq): endpoint:"), "{err}");
        let mut bad = config(SINK_KEYS, &[]);
        bad.values.insert("pattern".into(), ConfigValue::Str("reqrep".into()));
        let err = SinkSettings::from_config(&bad).unwrap_err();
        assert!(err.0.contains("unknown pattern 'reqrep'"), "{err}");
        let err = SourceSettings::from_config(&config(SOURCE_KEYS, &[("timeout", "0")])).unwrap_err();
        assert!(err.0.contains("timeout"), "{err}");
        let err = SourceSettings::from_config(&config(SOURCE_KEYS, &[("senders", "0")])).unwrap_err();
        assert!(err.0.contains("senders"), "{err}");
        let err = SinkSettings::from_config(&config(SINK_KEYS, &[("hold", "101ms")])).unwrap_err();
        assert!(
            err.0
                .starts_with("Snk1 (smx_snk_zmq): hold: 101ms is longer than 100ms"),
            "{err}"
        );
        let err = SinkSettings::from_config(&config(SINK_KEYS, &[("batch", "0")])).unwrap_err();
        assert!(
            err.0.starts_with("Snk1 (smx_snk_zmq): batch: must be at least 1"),
            "{err}"
        );
    }
}
