//! What the slices tell while they run, made into figures of the whole net: the progress
//! line's count and time, and the live figures of `--stats-every` as one process would give
//! them (nets and channels under their ids in the whole net, a cut channel once).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use smx_graph::NetGraph;
use smx_runtime::{ChannelSample, FirewallSample, NetSample, Snapshot};

use crate::slice::{Origin, Split};

/// The latest progress and live figures of each slice, in the order of the jobs: written by
/// the supervision while the progress line and the live figures' writer read them.
#[derive(Debug, Default)]
pub struct Live(Mutex<Heard>);

#[derive(Debug, Default)]
struct Heard {
    slices: Vec<Told>,
    /// The latest time given out: the next is never earlier. A slice's time runs on from when
    /// it was told, and a telling that arrives late (its pipe read after a busy moment) says
    /// less than that; the lines of `--stats-every` and the progress line must not go back.
    given: Duration,
}

impl Heard {
    /// Whether each of the first `wanted` slices told figures since the last snapshot of the
    /// whole net was made, or told its final ones.
    fn fresh_from_all(&self, wanted: usize) -> bool {
        let fresh = |t: &Told| t.stats.as_ref().is_some_and(|s| t.stats_new || s.finished);
        self.slices.len() >= wanted && self.slices[..wanted].iter().all(fresh)
    }

    /// The time the longest-running slice's nets have run, as of now: each slice's time goes
    /// on from when it was told, so that lines and rates follow this clock and not the moments
    /// the slices' figures happened to arrive; never earlier than the time given out before.
    fn elapsed(&mut self) -> Option<Duration> {
        let now = self
            .slices
            .iter()
            .filter_map(|t| t.progress)
            .map(|(_, t, heard)| t.saturating_add(heard.elapsed()))
            .max()?
            .max(self.given);
        self.given = now;
        Some(now)
    }
}

#[derive(Debug, Default, Clone)]
struct Told {
    /// Messages and time as the slice told them, and when that was heard.
    progress: Option<(u64, Duration, Instant)>,
    stats: Option<Snapshot>,
    /// `stats` came after the last snapshot of the whole net was made.
    stats_new: bool,
}

impl Live {
    fn told(&self, slice: usize, tell: impl FnOnce(&mut Told)) {
        let mut heard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let told = &mut heard.slices;
        if told.len() <= slice {
            told.resize(slice + 1, Told::default());
        }
        tell(&mut told[slice]);
    }

    pub fn record(&self, slice: usize, messages: u64, elapsed: Duration) {
        self.told(slice, |t| t.progress = Some((messages, elapsed, Instant::now())));
    }

    pub fn record_stats(&self, slice: usize, snapshot: Snapshot) {
        self.told(slice, |t| {
            t.progress = Some((snapshot.messages, snapshot.elapsed, Instant::now()));
            t.stats = Some(snapshot);
            t.stats_new = true;
        });
    }

    /// Per slice, the messages it last told (its count of the whole net's sinks it holds);
    /// `None` for one that told none.
    pub fn told_messages(&self) -> Vec<Option<u64>> {
        let heard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        heard.slices.iter().map(|t| t.progress.map(|(m, ..)| m)).collect()
    }

    /// The longest time any slice told its nets had run, as it told it: a slice that died
    /// before its report ran at least that long.
    pub fn told_wall(&self) -> Option<Duration> {
        let heard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        heard.slices.iter().filter_map(|t| t.progress).map(|(_, t, _)| t).max()
    }

    /// The whole run's messages so far, the sum over the slices marked in `counted` (those
    /// that hold a sink of the whole net: a slice whose only sinks are links counts what its
    /// links carry, which its consumers count again), and the longest time any slice's nets
    /// have run, as of now (each slice's time goes on from when it was told). `None` before
    /// any slice told its progress.
    pub fn sample(&self, counted: &[bool]) -> Option<(u64, Duration)> {
        let mut heard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let elapsed = heard.elapsed()?;
        let messages = heard
            .slices
            .iter()
            .zip(counted)
            .filter(|(_, counts)| **counts)
            .filter_map(|(t, _)| t.progress.map(|(m, ..)| m))
            .sum();
        Some((messages, elapsed))
    }

    /// The live figures of the whole net from the slices' latest ones ([`whole_snapshot`]),
    /// once every slice told figures newer than those of the snapshot before (or its final
    /// ones): the slices count at the same instants, and a line made before all of them told
    /// theirs would put one slice's counts of this moment beside another's of the moment
    /// before, a sink ahead of its source. `None` until then.
    pub fn snapshot(&self, split: &Split, graph: &NetGraph, counted: &[bool]) -> Option<Snapshot> {
        let mut heard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let wanted = split.slices.len();
        if !heard.fresh_from_all(wanted) {
            return None;
        }
        let slices: Vec<Option<&Snapshot>> = heard.slices[..wanted].iter().map(|t| t.stats.as_ref()).collect();
        let mut whole = whole_snapshot(split, graph, counted, &slices)?;
        let told = whole.elapsed;
        whole.elapsed = heard.elapsed().unwrap_or(told).max(told);
        heard.given = whole.elapsed;
        for told in &mut heard.slices {
            told.stats_new = false;
        }
        Some(whole)
    }
}

/// One snapshot of the whole net from its slices' (`None`: nothing told yet): each net under
/// its id in the whole net, link boxes left out; each channel once, a cut one `written` by its
/// producer's half and `read` by its consumer's, what is on its way over the link in its
/// `fill`; firewalls named with their process. Finished once every slice finished.
pub fn whole_snapshot(
    split: &Split,
    graph: &NetGraph,
    counted: &[bool],
    slices: &[Option<&Snapshot>],
) -> Option<Snapshot> {
    let elapsed = slices.iter().flatten().map(|s| s.elapsed).max()?;
    let name = |id: usize| format!("{}#{id}", graph.nodes[id].label);
    let mut nets = Vec::new();
    let mut firewalls = Vec::new();
    // Per channel of the whole net: its halves' samples, producer's side first.
    let mut halves: Vec<Vec<&ChannelSample>> = vec![Vec::new(); graph.edges.len()];
    for (slice, snapshot) in split.slices.iter().zip(slices) {
        let Some(snapshot) = snapshot else { continue };
        for net in &snapshot.nets {
            if let Some(Origin::Node(id)) = slice.origins.get(net.id) {
                nets.push(NetSample {
                    id: *id,
                    name: name(*id),
                    loop_count: net.loop_count,
                });
            }
        }
        for channel in &snapshot.channels {
            let Some(&whole) = slice.edges.get(channel.id) else {
                continue;
            };
            let feeds_link = slice
                .graph
                .edges
                .get(channel.id)
                .and_then(|e| slice.origins.get(e.target))
                .is_some_and(|o| matches!(o, Origin::LinkSink(_)));
            if let Some(samples) = halves.get_mut(whole) {
                if feeds_link {
                    samples.insert(0, channel);
                } else {
                    samples.push(channel);
                }
            }
        }
        firewalls.extend(snapshot.firewalls.iter().map(|f| FirewallSample {
            name: format!("{}: {}", slice.process, f.name),
            ..f.clone()
        }));
    }
    nets.sort_by_key(|n| n.id);
    let channels = graph
        .edges
        .iter()
        .zip(&halves)
        .filter(|(_, samples)| !samples.is_empty())
        .map(|(edge, samples)| whole_channel(edge, samples, name(edge.source), name(edge.target)))
        .collect();
    let messages = slices
        .iter()
        .zip(counted)
        .filter(|(_, counts)| **counts)
        .filter_map(|(s, _)| s.map(|s| s.messages))
        .sum();
    Some(Snapshot {
        elapsed,
        messages,
        nets,
        channels,
        firewalls,
        finished: slices.iter().all(|s| s.is_some_and(|s| s.finished)),
    })
}

/// One channel of the whole net from its halves' samples (producer's side first; one sample
/// where the channel is not cut).
fn whole_channel(edge: &smx_graph::Edge, samples: &[&ChannelSample], from: String, to: String) -> ChannelSample {
    let (first, last) = (samples[0], samples[samples.len() - 1]);
    let written = first.written;
    // The slices sample apart, up to an interval from each other: a consumer's half counted
    // later than its producer's shows no more read than written, and what the difference
    // holds is at most what the channel can.
    let read = last.read.min(written);
    let overwritten = samples.iter().map(|c| c.overwritten).sum::<u64>();
    let dropped = samples.iter().map(|c| c.dropped).sum::<u64>();
    let fill = if samples.len() == 1 {
        first.fill
    } else {
        written
            .saturating_sub(read + overwritten + dropped)
            .min(edge.len as u64)
    };
    ChannelSample {
        id: edge.id,
        from,
        to,
        len: edge.len as usize,
        written,
        read,
        overwritten,
        dropped,
        fill,
    }
}

/// The last live figures of a run over several processes, once it is over: the counts of its
/// merged `report` (what a process that died left unknown is left out, as the report leaves
/// it `null`), the firewalls of `last` with the report's counts, finished.
pub fn final_snapshot(report: &serde_json::Value, last: Option<Snapshot>) -> Snapshot {
    let count = |v: &serde_json::Value| v.as_u64();
    let rows = |key: &str| report[key].as_array().cloned().unwrap_or_default();
    let nets = rows("nets")
        .iter()
        .filter_map(|n| {
            let id = count(&n["id"])? as usize;
            Some(NetSample {
                id,
                name: format!("{}#{id}", n["name"].as_str()?),
                loop_count: count(&n["loop_count"])?,
            })
        })
        .collect();
    let channels = rows("channels")
        .iter()
        .filter_map(|c| {
            let (written, read) = (count(&c["written"])?, count(&c["read"])?);
            let of = |key: &str| count(&c[key]).unwrap_or(0);
            let len = of("len");
            let gone = read + of("overwritten") + of("dropped") + of("left") + count(&c["link"]["lost"]).unwrap_or(0);
            Some(ChannelSample {
                id: count(&c["id"])? as usize,
                from: format!("{}#{}", c["from"].as_str()?, of("from_id")),
                to: format!("{}#{}", c["to"].as_str()?, of("to_id")),
                len: len as usize,
                written,
                read,
                overwritten: of("overwritten"),
                dropped: of("dropped"),
                fill: written.saturating_sub(gone).min(len),
            })
        })
        .collect();
    let wall = Duration::try_from_secs_f64(report["wall_time_s"].as_f64().unwrap_or(0.0)).unwrap_or_default();
    let before = last.as_ref().map_or(Duration::ZERO, |l| l.elapsed);
    Snapshot {
        elapsed: wall.max(before),
        messages: count(&report["messages"]).unwrap_or(0),
        nets,
        channels,
        firewalls: last
            .map(|l| l.firewalls.into_iter().map(|f| final_firewall(f, report)).collect())
            .unwrap_or_default(),
        finished: true,
    }
}

/// A firewall's last live figures (named `PROCESS: NAME`) with the counts of its row in the
/// merged `report`, where one row alone has its name; else as last sampled.
fn final_firewall(sampled: FirewallSample, report: &serde_json::Value) -> FirewallSample {
    let name = sampled.name.split_once(": ").map_or(sampled.name.as_str(), |(_, n)| n);
    let rows: Vec<&serde_json::Value> = report["firewalls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["name"] == name)
        .collect();
    let [row] = rows[..] else { return sampled };
    let count = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let pairs = || row["pairs"].as_array().into_iter().flatten();
    FirewallSample {
        ticks: count(&row["ticks"]),
        missed_ticks: count(&row["missed_ticks"]),
        overruns: count(&row["overruns"]),
        produce_misses: pairs().map(|p| count(&p["produce_misses"])).sum(),
        consume_misses: pairs().map(|p| count(&p["consume_misses"])).sum(),
        ..sampled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_firewall_figures_are_the_reports_where_its_name_is_one_row() {
        let sampled = FirewallSample {
            name: "main: tf_10.0us_0".into(),
            ticks: 90,
            missed_ticks: 1,
            overruns: 0,
            produce_misses: 0,
            consume_misses: 0,
        };
        let row = |name: &str| {
            serde_json::json!({"name": name, "ticks": 100, "missed_ticks": 3, "overruns": 2,
                "pairs": [{"produce_misses": 1, "consume_misses": 2}, {"produce_misses": 3, "consume_misses": 0}]})
        };
        let report = serde_json::json!({"firewalls": [row("tf_10.0us_0"), row("tf_1.0ms_1")]});
        let last = final_firewall(sampled.clone(), &report);
        assert_eq!(
            (
                last.name.as_str(),
                last.ticks,
                last.missed_ticks,
                last.overruns,
                last.produce_misses,
                last.consume_misses
            ),
            ("main: tf_10.0us_0", 100, 3, 2, 4, 2)
        );
        // Two processes with a firewall of one name: which row is whose is not known.
        let report = serde_json::json!({"firewalls": [row("tf_10.0us_0"), row("tf_10.0us_0")]});
        assert_eq!(final_firewall(sampled.clone(), &report), sampled);
    }

    /// A snapshot of the whole net waits for every slice's figures of the next instant; a slice
    /// that told its final figures waits for nothing more.
    #[test]
    fn the_whole_net_waits_for_every_slices_new_figures() {
        let told = |finished: bool| Snapshot {
            elapsed: Duration::from_millis(1),
            messages: 0,
            nets: Vec::new(),
            channels: Vec::new(),
            firewalls: Vec::new(),
            finished,
        };
        let live = Live::default();
        let fresh = |live: &Live| live.0.lock().unwrap().fresh_from_all(2);
        // What a snapshot of the whole net does to the figures it used.
        let used = |live: &Live| {
            for t in &mut live.0.lock().unwrap().slices {
                t.stats_new = false;
            }
        };
        assert!(!fresh(&live), "nothing told");
        live.record_stats(0, told(false));
        assert!(!fresh(&live), "the second slice told nothing yet");
        live.record(1, 5, Duration::from_millis(1));
        assert!(!fresh(&live), "progress is no figures");
        live.record_stats(1, told(false));
        assert!(fresh(&live));
        used(&live);
        live.record_stats(1, told(false));
        assert!(!fresh(&live), "the first slice's figures were used already");
        live.record_stats(0, told(true));
        assert!(fresh(&live));
        used(&live);
        live.record_stats(1, told(false));
        assert!(fresh(&live), "a finished slice tells nothing more");
    }

    #[test]
    fn the_progress_sums_the_counted_slices_and_takes_the_longest_time() {
        let live = Live::default();
        assert_eq!(live.sample(&[true, true]), None, "nothing told yet");
        // The producer's slice counts what its link carries; the consumer's slice counts its sink.
        live.record(0, 900, Duration::from_millis(500));
        let (messages, elapsed) = live.sample(&[false, true]).unwrap();
        assert_eq!(messages, 0);
        assert!(elapsed >= Duration::from_millis(500));
        live.record(1, 800, Duration::from_millis(450));
        live.record(1, 850, Duration::from_secs(700));
        let (messages, elapsed) = live.sample(&[false, true]).unwrap();
        assert_eq!(messages, 850);
        assert!(elapsed >= Duration::from_secs(700), "the longest-running slice's time");
        assert_eq!(live.sample(&[true, true]).unwrap().0, 1_750);
        // Time goes on between the slices' tellings; what they told stays.
        std::thread::sleep(Duration::from_millis(20));
        assert!(live.sample(&[true, true]).unwrap().1 >= elapsed + Duration::from_millis(20));
        assert_eq!(live.told_wall(), Some(Duration::from_secs(700)));
        assert_eq!(Live::default().told_wall(), None);
    }

    #[test]
    fn the_time_given_out_never_goes_back_when_a_slice_tells_late() {
        let live = Live::default();
        live.record(0, 10, Duration::from_millis(40));
        std::thread::sleep(Duration::from_millis(30));
        let (_, first) = live.sample(&[true]).unwrap();
        assert!(first >= Duration::from_millis(70), "{first:?}");
        // The slice's next telling was on its way while this side's clock ran on.
        live.record(0, 20, Duration::from_millis(45));
        let (messages, second) = live.sample(&[true]).unwrap();
        assert_eq!(messages, 20);
        assert!(second >= first, "{second:?} after {first:?}");
    }
}
