//! The report rows of the link boxes (section `shm`), so a report shows a link's books.
//!
//! The sink's row: `written` (published into the ring) = what the source received + `left`
//! (not taken: the source closed, or the run stopped and the sink cut the ring, after which the
//! source takes none of it) + `lost` (not taken: the source's process died, or no source ever
//! attached). `dropped` counts messages the sink read from its
//! input but could not publish because the source's side was over. The source's row:
//! `received` (= `copied` + `in_place`), how the stream ended, and `peer_died` when the
//! producer's process died without ending it (the merge of both rows then counts what the
//! producer wrote and this side never received as lost on the producer's side).

use smx_box::{StatValue, Stats};

use crate::consumer::{ConsumerBooks, ProducerEnd};
use crate::producer::{ConsumerEnd, ProducerBooks};
use crate::settings::Settings;

pub const SECTION: &str = "shm";

pub fn sink_row(s: &Settings, b: &ProducerBooks, dropped: u64, aborted: bool) -> Stats {
    let mut problems = Vec::new();
    let mut verdict = "ok";
    match b.consumer {
        // What the dead process had taken and not yet passed on is unknown here, and the
        // stream ended early: not a clean end, whatever this side's count says.
        Some(ConsumerEnd::Died) => {
            verdict = "incomplete";
            problems.push(format!(
                "the consumer's process died: {} message(s) lost in the ring, the fate of those it had taken unknown",
                b.lost
            ));
        }
        Some(ConsumerEnd::Absent) => {
            verdict = "incomplete";
            problems.push(format!("no consumer attached within timeout {:?}", s.timeout));
        }
        Some(ConsumerEnd::Closed) if b.left > 0 => problems.push(format!("the consumer closed, {} left", b.left)),
        // Exact books: what the consumer had not taken when it answered the cut is `left`, as
        // in a channel of one process, and it takes none of it after: its own books count
        // every message it took.
        Some(ConsumerEnd::Stopped) if b.left > 0 => {
            problems.push(format!("stopped with {} message(s) left in the ring", b.left))
        }
        _ => {}
    }
    if b.cut_unanswered {
        problems.push(format!(
            "the consumer did not answer the cut within {:?}: left is from its last count, and the message it was handing on may be counted both as received and as left",
            crate::ring::ANSWER_WAIT
        ));
    }
    if aborted {
        verdict = "incomplete";
        problems.push("ended early (failed)".into());
    }
    let summary = format!(
        "{} shm sink {}: written {}, left {}, lost {}, dropped {dropped}, consumer {}",
        s.instance,
        s.path.display(),
        b.written,
        b.left,
        b.lost,
        b.consumer.map_or("?", ConsumerEnd::as_str)
    );
    Stats::new()
        .in_section(SECTION)
        .with("name", s.instance.as_str())
        .with("role", "sink")
        .with("path", s.path.display().to_string())
        .with("len", s.len)
        .with("written", b.written)
        .with("received", StatValue::None)
        .with("left", b.left)
        .with("lost", b.lost)
        .with("lost_side", if b.lost > 0 { "consumer" } else { "" })
        .with("dropped", dropped)
        .with("full_waits", b.full_waits)
        .with("peer_died", b.consumer == Some(ConsumerEnd::Died))
        .with("peer", b.consumer.map(ConsumerEnd::as_str))
        .with("aborted", aborted)
        .with("verdict", verdict)
        .with("problems", problems.join("; "))
        .summary(summary)
}

pub fn source_row(s: &Settings, b: &ConsumerBooks, stopped: bool) -> Stats {
    let (verdict, problem) = match (b.end, stopped) {
        // What it took before the stop is all in its books, and what it left is the
        // producer's `left`.
        (_, true) => ("ok", "stopped before the end of the stream".to_string()),
        (Some(ProducerEnd::Ended), _) => ("ok", String::new()),
        (Some(ProducerEnd::Failed), _) => (
            "incomplete",
            "the producer ended the stream early (failed or stopped)".into(),
        ),
        // The producer's run stopped first and cut the ring: what it published from the cut on
        // is its `left`, none of it taken here.
        (Some(ProducerEnd::Stopped), _) => (
            "ok",
            "the producer's run stopped: what this side had not taken then is left in the producer's books".into(),
        ),
        (Some(ProducerEnd::Died), _) => (
            "incomplete",
            "the producer's process died: what it read but never published is lost there".into(),
        ),
        (None, _) => ("ok", String::new()),
    };
    let summary = format!(
        "{} shm source {}: received {} ({} copied, {} in place), ended by {}",
        s.instance,
        s.path.display(),
        b.received,
        b.copied,
        b.in_place,
        b.end
            .map_or(if stopped { "stop" } else { "its consumers" }, ProducerEnd::as_str)
    );
    Stats::new()
        .in_section(SECTION)
        .with("name", s.instance.as_str())
        .with("role", "source")
        .with("path", s.path.display().to_string())
        .with("written", StatValue::None)
        .with("received", b.received)
        .with("copied", b.copied)
        .with("in_place", b.in_place)
        .with("peer_died", b.end == Some(ProducerEnd::Died))
        .with("peer", b.end.map(ProducerEnd::as_str))
        .with("stopped", stopped)
        .with("verdict", verdict)
        .with("problems", problem)
        .summary(summary)
}
