//! The settings `bench tune` tries: the runtime's defaults, and every combination of `--pin`,
//! `--wait-spin` and (for time-triggered rows) `--tt-mode` that a user could pass by hand.

use std::time::Duration;

use smx_runtime::TtMode;
use smx_runtime::{PinMode, RunOptions, channel::DEFAULT_SPIN};

use super::tt::mode_name;

/// One point of the sweep; `None` in every field is the runtime's default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub pin: Option<PinMode>,
    pub spin: Option<Duration>,
    pub mode: Option<TtMode>,
}

impl Setting {
    /// Exactly what `smxrun net.smx` runs with no option.
    pub const DEFAULT: Setting = Setting {
        pin: None,
        spin: None,
        mode: None,
    };

    pub fn is_default(&self) -> bool {
        *self == Setting::DEFAULT
    }

    /// The options of a run under this setting.
    pub fn options(&self) -> RunOptions {
        let mut opts = RunOptions::default();
        if let Some(pin) = &self.pin {
            opts.pin = pin.clone();
        }
        if let Some(spin) = self.spin {
            opts.wait_spin = spin;
        }
        if let Some(mode) = self.mode {
            opts.firewall.mode = mode;
        }
        opts
    }

    /// The command-line options that select this setting (`default` for none).
    pub fn label(&self) -> String {
        if self.is_default() {
            return "default".into();
        }
        let mut parts = Vec::new();
        if let Some(pin) = &self.pin {
            parts.push(format!("--pin {}", pin_literal(pin)));
        }
        if let Some(spin) = self.spin {
            parts.push(format!("--wait-spin {}", spin_literal(spin)));
        }
        if let Some(mode) = self.mode {
            parts.push(format!("--tt-mode {}", mode_name(mode)));
        }
        parts.join(" ")
    }

    /// The sweep's setting that runs exactly as the default does (`cyclic`: what `--tt-mode
    /// auto` chose, for a time-triggered row): its figure beside the default's shows the noise.
    pub fn twin_of_default(time_triggered: bool, cyclic: bool) -> Setting {
        Setting {
            pin: Some(PinMode::Auto),
            spin: Some(DEFAULT_SPIN),
            mode: time_triggered.then_some(if cyclic { TtMode::Cyclic } else { TtMode::Threads }),
        }
    }

    /// The case parameters that identify this setting in a saved result.
    pub fn params(&self) -> Vec<(&'static str, String)> {
        let opts = self.options();
        vec![
            ("setting", self.label()),
            ("pin", pin_name(&opts.pin).to_string()),
            ("wait_spin", spin_literal(opts.wait_spin)),
            ("tt_mode", mode_name(opts.firewall.mode).to_string()),
        ]
    }
}

/// A placement as `--pin` reads it: `auto`, `off`, or its list of cores (`0,1`).
pub fn pin_literal(pin: &PinMode) -> String {
    match pin {
        PinMode::List(cores) => cores.iter().map(usize::to_string).collect::<Vec<_>>().join(","),
        other => pin_name(other).to_string(),
    }
}

fn pin_name(pin: &PinMode) -> &'static str {
    match pin {
        PinMode::Auto => "auto",
        PinMode::Off => "off",
        PinMode::List(_) => "spread",
    }
}

/// A duration as `--wait-spin` reads it (`0`, `10us`, `1500ns`).
pub fn spin_literal(spin: Duration) -> String {
    if spin.is_zero() {
        "0".into()
    } else {
        super::tt::literal(spin)
    }
}

/// The values each dimension takes, after defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    pub pins: Vec<PinMode>,
    pub spins: Vec<Duration>,
    pub modes: Vec<TtMode>,
}

impl Sweep {
    /// From the command line's lists (empty: the default values). The runtime's default spin
    /// is always among the spins, so the sweep contains the default's own setting and a
    /// default/best ratio measures only the noise when the default is already the best.
    pub fn new(pins: &[String], spins: &[Duration], modes: &[TtMode]) -> Sweep {
        let spread = || PinMode::List(smx_timing::sched::allowed_cores());
        let mut pins: Vec<PinMode> = if pins.is_empty() {
            vec![PinMode::Auto, PinMode::Off, spread()]
        } else {
            pins.iter()
                .map(|p| match p.as_str() {
                    "off" => PinMode::Off,
                    "spread" => spread(),
                    _ => PinMode::Auto,
                })
                .collect()
        };
        pins.dedup();
        let mut spins = if spins.is_empty() {
            [0, 10, 50, 200].map(Duration::from_micros).to_vec()
        } else {
            spins.to_vec()
        };
        spins.push(DEFAULT_SPIN);
        spins.sort();
        spins.dedup();
        let mut modes = if modes.is_empty() {
            vec![TtMode::Threads, TtMode::Cyclic]
        } else {
            modes.to_vec()
        };
        modes.dedup();
        Sweep { pins, spins, modes }
    }

    /// Every setting for a row: `pins x spins`, times `modes` for a time-triggered row.
    pub fn settings(&self, time_triggered: bool) -> Vec<Setting> {
        let modes: Vec<Option<TtMode>> = if time_triggered {
            self.modes.iter().copied().map(Some).collect()
        } else {
            vec![None]
        };
        let mut out = Vec::new();
        for mode in &modes {
            for pin in &self.pins {
                for spin in &self.spins {
                    out.push(Setting {
                        pin: Some(pin.clone()),
                        spin: Some(*spin),
                        mode: *mode,
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_holds_the_default_spin_and_every_combination() {
        let sweep = Sweep::new(&[], &[Duration::ZERO], &[]);
        assert_eq!(sweep.spins, vec![Duration::ZERO, DEFAULT_SPIN]);
        // Pins auto, off and spread; two spins; two modes for a time-triggered row.
        assert_eq!(sweep.settings(false).len(), 3 * 2);
        assert_eq!(sweep.settings(true).len(), 3 * 2 * 2);
        assert!(sweep.settings(true).iter().all(|s| s.mode.is_some()));
        assert!(sweep.settings(false).iter().all(|s| s.mode.is_none()));
    }

    #[test]
    fn labels_are_the_options_a_user_types() {
        assert_eq!(Setting::DEFAULT.label(), "default");
        let spread = Setting {
            pin: Some(PinMode::List(vec![0, 1])),
            ..Setting::DEFAULT
        };
        assert_eq!(spread.label(), "--pin 0,1");
        // The result's settings name placements as the option does, not as Rust prints them.
        let pins = [PinMode::Auto, PinMode::Off, PinMode::List(vec![0, 1])];
        assert_eq!(pins.iter().map(pin_literal).collect::<Vec<_>>(), ["auto", "off", "0,1"]);
        let s = Setting {
            pin: Some(PinMode::Off),
            spin: Some(Duration::ZERO),
            mode: Some(TtMode::Cyclic),
        };
        assert_eq!(s.label(), "--pin off --wait-spin 0 --tt-mode cyclic");
        let opts = s.options();
        assert_eq!(
            (opts.pin, opts.wait_spin, opts.firewall.mode),
            (PinMode::Off, Duration::ZERO, TtMode::Cyclic)
        );
        let defaults = Setting::DEFAULT.params();
        assert_eq!(defaults[2], ("wait_spin", spin_literal(DEFAULT_SPIN)));
        assert_eq!(defaults[3], ("tt_mode", "auto".to_string()));
    }
}
